//! Faults an operator will meet (issue 15: finding 1 on the demo repository, and the weak
//! spots), on the real binary with the demo repository and the testkit server:
//! - one flipped bit at byte 20000 of a `reviews` shard blob: the item fails naming the
//!   file, the run exits non-zero, and `verify` does not pass;
//! - a missing or corrupt shard file fails that shard's item only, named in `rfs status`;
//!   the other shards are migrated;
//! - every document refused (403 `cluster_block_exception`): exit 7, and `rfs status`
//!   says plainly that documents were not delivered;
//! - a target answering 500 forever, and one that does not answer: the wait is bounded
//!   (`--bulk-retry-seconds`, `--target-timeout`) and said at the default log level, a
//!   few lines, not one per retry;
//! - SIGTERM: the worker finishes or abandons its batches, checkpoints, releases its items
//!   and exits 5 within seconds; a worker started next takes them over at once.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use testkit::server::{Faults, ServerConfig, TestServer};

/// The blobs of shard `shard` of `index` in the repository at `repo`: (blob path,
/// physical Lucene file name, length).
fn shard_blobs(repo: &Path, index: &str, shard: u32) -> Vec<(PathBuf, String, u64)> {
    let store = snapshot::open_blob_store(repo.to_str().unwrap(), &Default::default()).unwrap();
    let repository = snapshot::Repository::open(store).unwrap();
    let snap = repository.snapshot(SNAPSHOT).unwrap();
    let ix = snap.index(index).unwrap();
    let dir = repo.join(ix.shard_dir(shard));
    let sh = ix.open_shard(shard).unwrap();
    sh.directory()
        .file_infos()
        .filter(|f| !f.is_virtual())
        .map(|f| (dir.join(&f.name), f.physical_name.clone(), f.length))
        .collect()
}

fn verify_all(repo: &Path, server: &TestServer) -> Ran {
    let mut c = rfs();
    c.arg("verify")
        .arg(repo)
        .args(["--snapshot", SNAPSHOT, "--target", &server.url(), "--all"]);
    run(c)
}

/// Issue 15, finding 1, repeated on the demo repository: once, `rfs run` exited 0 and
/// `verify --all` passed with `mountai` for `mountain` in the target.
#[test]
fn a_flipped_bit_in_a_reviews_blob_fails_the_item_naming_the_file() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    copy_demo(&repo);
    let blobs = shard_blobs(&repo, "reviews", 0);
    let (path, physical, _) = blobs
        .iter()
        .filter(|(_, name, len)| name.ends_with(".cfs") && *len > 20_000)
        .max_by_key(|(_, _, len)| *len)
        .cloned()
        .expect("a reviews compound blob past byte 20000");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20_000] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let blob = path.file_name().unwrap().to_str().unwrap().to_string();

    let dir = work.path().join("state");
    std::fs::create_dir(&dir).unwrap();
    let mut c = rfs();
    c.arg("run")
        .arg("--repo")
        .arg(&repo)
        .args(["--snapshot", SNAPSHOT, "--target", &server.url()])
        .args([
            "--store",
            &sqlite(&dir),
            "--max-attempts",
            "2",
            "--no-progress",
        ])
        .arg("--failure-log")
        .arg(dir.join("failures.jsonl"))
        .current_dir(&dir);
    let r = run(c);
    assert_eq!(r.code, Some(1), "{r}");
    assert!(r.stderr.contains("FAILED reviews__0__0"), "{r}");
    assert!(r.stderr.contains(&blob), "the blob is not named: {r}");
    let _ = physical;
    let st = status(&dir);
    let failed = st["failed_items"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{st:#}");
    assert!(
        failed[0]["last_error"].as_str().unwrap().contains(&blob),
        "{st:#}"
    );
    // The books index is whole; the corrupt shard does not pass verify.
    assert_target_holds(&server, &["books"]);
    let v = verify_all(&repo, &server);
    assert_ne!(v.code, Some(0), "{v}");
    assert!(v.all().contains(&blob), "{v}");
}

/// Issue 25, point 1: a shard cut into doc-id ranges (`--split-docs`) once read the
/// damaged segment in pieces, none of which covered it whole, so its checksum was never
/// completed and `rfs run` exited 0 with the changed documents on the target. Every item
/// that reaches the damaged stored fields now fails before it sends a document of them,
/// every retry fails the same way, the run exits 1, and every document on the target is
/// the snapshot's own.
#[test]
fn a_damaged_segment_read_in_split_items_fails_and_sends_nothing_of_it() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    copy_demo(&repo);
    let (path, _, _) = shard_blobs(&repo, "reviews", 0)
        .into_iter()
        .filter(|(_, name, len)| name.ends_with(".cfs") && *len > 20_000)
        .max_by_key(|(_, _, len)| *len)
        .expect("a reviews compound blob past byte 20000");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20_000] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let blob = path.file_name().unwrap().to_str().unwrap().to_string();

    let dir = work.path().join("state");
    std::fs::create_dir(&dir).unwrap();
    let mut c = rfs();
    c.arg("run")
        .arg("--repo")
        .arg(&repo)
        .args(["--snapshot", SNAPSHOT, "--target", &server.url()])
        .args(["--store", &sqlite(&dir), "--no-progress"])
        .args(["--split-docs", "40", "--max-attempts", "2"])
        .arg("--failure-log")
        .arg(dir.join("failures.jsonl"))
        .current_dir(&dir);
    let r = run(c);
    assert_eq!(r.code, Some(1), "{r}");
    let st = status(&dir);
    let failed = st["failed_items"].as_array().unwrap();
    assert!(!failed.is_empty(), "{st:#}");
    for f in failed {
        let e = f["last_error"].as_str().unwrap();
        assert!(
            e.contains(&blob) && e.contains("checksum mismatch"),
            "{st:#}"
        );
    }
    // whatever arrived is the snapshot's own, document by document
    let expected = expected_documents();
    let held = server.documents("reviews");
    assert!(!held.is_empty());
    for (id, source) in &held {
        assert_eq!(
            expected.get(&("reviews".to_string(), id.clone())),
            Some(source),
            "{id} differs from the snapshot"
        );
    }
    assert_target_holds(&server, &["books"]);
}

/// What is damaged in shard 0 of `books` for [`a_broken_shard_file_fails_only_its_item`].
enum Damage {
    /// The shard's snapshot metadata (`snap-UUID.dat` in the shard directory) is gone.
    MissingMetadata,
    /// One bit of the smallest data blob (a segment's info or compound-file entries,
    /// read when the shard is opened) is flipped.
    CorruptSmallFile,
    /// The largest data blob is gone.
    MissingData,
}

/// Applies `damage` to the repository at `repo`; returns the names (blob, Lucene file)
/// an error about it may give.
fn damage_books_shard_0(repo: &Path, damage: &Damage) -> Vec<String> {
    let store = snapshot::open_blob_store(repo.to_str().unwrap(), &Default::default()).unwrap();
    let repository = snapshot::Repository::open(store).unwrap();
    let ix = repository
        .snapshot(SNAPSHOT)
        .unwrap()
        .index("books")
        .unwrap();
    let shard_dir = repo.join(ix.shard_dir(0));
    let blobs = shard_blobs(repo, "books", 0);
    match damage {
        Damage::MissingMetadata => {
            let meta = std::fs::read_dir(&shard_dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .find(|n| n.starts_with("snap-") && n.ends_with(".dat"))
                .expect("the shard's snap-*.dat");
            std::fs::remove_file(shard_dir.join(&meta)).unwrap();
            vec![meta]
        }
        Damage::CorruptSmallFile => {
            let (path, physical, _) = blobs.into_iter().min_by_key(|(_, _, len)| *len).unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            let at = bytes.len() / 2;
            bytes[at] ^= 0x10;
            std::fs::write(&path, &bytes).unwrap();
            let blob = path.file_name().unwrap().to_str().unwrap().to_string();
            vec![blob, physical]
        }
        Damage::MissingData => {
            let (path, physical, _) = blobs.into_iter().max_by_key(|(_, _, len)| *len).unwrap();
            std::fs::remove_file(&path).unwrap();
            let blob = path.file_name().unwrap().to_str().unwrap().to_string();
            vec![blob, physical]
        }
    }
}

/// Issue 15: one corrupt or missing shard file failed items setup for the whole migration
/// (every index created empty, every re-run the same). Now only that shard's item fails,
/// named in `rfs status` (as a broken shard, found at setup, and as a failed item); the
/// other shards are migrated document by document.
#[test]
fn a_broken_shard_file_fails_only_its_item() {
    for damage in [
        Damage::MissingMetadata,
        Damage::CorruptSmallFile,
        Damage::MissingData,
    ] {
        let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
        let work = tempfile::tempdir().unwrap();
        let repo = work.path().join("repo");
        copy_demo(&repo);
        let names = damage_books_shard_0(&repo, &damage);
        let named = |text: &str| names.iter().any(|n| text.contains(n.as_str()));

        let dir = work.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        let r = run(documents(
            &repo,
            &dir,
            &server.url(),
            &["--max-attempts", "1"],
        ));
        assert_eq!(r.code, Some(1), "{names:?}: {r}");
        assert!(r.stderr.contains("1 work item(s) FAILED"), "{names:?}: {r}");
        let st = status(&dir);
        assert_eq!(st["items"]["done"], 2, "{names:?}: {st:#}");
        assert_eq!(st["items"]["failed"], 1, "{names:?}: {st:#}");
        let failed = &st["failed_items"][0];
        assert_eq!(failed["id"], "books__0__0", "{st:#}");
        assert!(
            named(failed["last_error"].as_str().unwrap()),
            "{names:?}: {st:#}"
        );
        // Found at setup: the shard is named broken in the index's progress.
        let broken = st["per_index"]["books"]["broken_shards"]["0"]
            .as_str()
            .unwrap_or_else(|| panic!("{names:?}: not found at setup: {st:#}"));
        assert!(named(broken), "{names:?}: {st:#}");
        let mut c = rfs();
        c.args(["status", "--store", &sqlite(&dir)]);
        let text = run(c).stdout;
        assert!(text.contains("FAILED item books__0__0"), "{text}");
        assert!(text.contains("FINISHED WITH 1 FAILED WORK ITEMS"), "{text}");
        // reviews whole; books shard 1 whole, compared document by document.
        assert_target_holds(&server, &["reviews"]);
        let shard1 = shard_1_documents();
        assert_eq!(
            st["per_index"]["books"]["docs_done"].as_u64(),
            Some(shard1.len() as u64),
            "{st:#}"
        );
        assert_eq!(server.documents("books"), shard1);
    }
}

/// The live documents of shard 1 of the demo's `books`: id → `_source`, as exported.
fn shard_1_documents() -> std::collections::BTreeMap<String, Value> {
    let store = snapshot::open_blob_store(demo().to_str().unwrap(), &Default::default()).unwrap();
    let repository = snapshot::Repository::open(store).unwrap();
    let ix = repository
        .snapshot(SNAPSHOT)
        .unwrap()
        .index("books")
        .unwrap();
    let shard = ix.open_shard(1).unwrap();
    let reader = snapshot::ShardReader::open_with(&shard, &Default::default()).unwrap();
    let ids: Vec<String> = reader
        .documents(0..reader.max_doc())
        .unwrap()
        .map(|d| d.unwrap().id)
        .collect();
    let all = expected_documents();
    let out: std::collections::BTreeMap<String, Value> = ids
        .into_iter()
        .map(|id| {
            let source = all[&("books".to_string(), id.clone())].clone();
            (id, source)
        })
        .collect();
    assert!(!out.is_empty() && out.len() < 1326);
    out
}

/// Every document refused by the target: not "FINISHED … 100 %" and exit 0, but exit 7
/// and a status that says the documents were not delivered.
#[test]
fn every_document_refused_is_exit_7_and_said_plainly() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    server.set_faults(Faults {
        write_blocked: ["books".to_string(), "reviews".to_string()].into(),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let r = run(documents(&demo(), dir.path(), &server.url(), &[]));
    assert_eq!(r.code, Some(7), "{r}");
    assert!(
        r.stderr.contains("1799 refused:cluster_block_exception"),
        "{r}"
    );
    assert_eq!(server.total_doc_count(), 0);
    let st = status(dir.path());
    assert_eq!(st["finished"], true);
    assert_eq!(
        (st["docs_done"].as_u64(), st["docs_refused"].as_u64()),
        (Some(0), Some(1799))
    );
    let mut c = rfs();
    c.args(["status", "--store", &sqlite(dir.path())])
        .arg("--failure-log")
        .arg(dir.path().join("failures.jsonl"));
    let text = run(c).stdout;
    assert!(
        text.contains("FINISHED WITH 1799 DOCUMENTS NOT DELIVERED"),
        "{text}"
    );
    assert!(text.contains("0 of 1799 delivered (0.0 %)"), "{text}");
    assert!(!text.contains("every document delivered"), "{text}");
    let log = engine::FailureLog::read(&dir.path().join("failures.jsonl")).unwrap();
    assert_eq!(log.len(), 1799);
    assert!(log
        .iter()
        .all(|r| r.error_type == "cluster_block_exception" && r.status == 403));
}

/// Lines of `stderr` at WARN or ERROR level containing `text`.
fn lines_with<'a>(stderr: &'a str, text: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|l| (l.contains("WARN") || l.contains("ERROR")) && l.contains(text))
        .collect()
}

/// A target that answers 500 forever: each batch is retried for the retry budget, said
/// at WARN every 10 s at most, then its item fails with the reason (here after one
/// attempt) and the run ends — in bounded time, not 15 attempts × 6 minutes per item.
#[test]
fn a_target_answering_500_forever_is_bounded_and_logged() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    server.set_faults(Faults {
        error_500: 1.0,
        bulk_only: true,
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let r = run(documents(
        &demo(),
        dir.path(),
        &server.url(),
        &[
            "--bulk-retry-seconds",
            "12",
            "--max-attempts",
            "1",
            "--parallel",
            "3",
        ],
    ));
    assert_eq!(r.code, Some(1), "{r}");
    assert!(r.took < Duration::from_secs(60), "{r}");
    let retrying = lines_with(&r.stderr, "not acknowledged yet, retrying: 500");
    assert!(!retrying.is_empty(), "{r}");
    // Rate-limited: one line per 10 s per process at most, plus the first.
    let most = 2 + r.took.as_secs() as usize / 10;
    assert!(
        retrying.len() <= most,
        "{} lines in {:?}: {r}",
        retrying.len(),
        r.took
    );
    let failed = lines_with(&r.stderr, "retry budget");
    assert!(
        !failed.is_empty(),
        "the item's failure gives the reason: {r}"
    );
    let st = status(dir.path());
    assert_eq!(st["items"]["failed"], 3, "{st:#}");
    for f in st["failed_items"].as_array().unwrap() {
        assert!(f["last_error"].as_str().unwrap().contains("500"), "{st:#}");
    }
}

/// A target that accepts requests and never answers: the wait is said while it lasts,
/// each request ends at --target-timeout, and the batch at the retry budget.
#[test]
fn a_hanging_target_is_reported_while_waiting_and_bounded() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    server.set_faults(Faults {
        latency_ms: 20_000,
        bulk_only: true,
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let r = run(documents(
        &demo(),
        dir.path(),
        &server.url(),
        &[
            "--index",
            "reviews",
            "--target-timeout",
            "4",
            "--bulk-retry-seconds",
            "10",
            "--max-attempts",
            "1",
            "--parallel",
            "1",
        ],
    ));
    assert_eq!(r.code, Some(1), "{r}");
    assert!(r.took < Duration::from_secs(60), "{r}");
    let waiting = lines_with(&r.stderr, "no answer from the target to a bulk request yet");
    assert!(!waiting.is_empty(), "{r}");
    assert!(
        !lines_with(&r.stderr, "not acknowledged yet, retrying").is_empty(),
        "the timeouts are retried and said: {r}"
    );
    let st = status(dir.path());
    assert_eq!(st["items"]["failed"], 1, "{st:#}");
}

/// SIGTERM (what Kubernetes sends): exit 5 within seconds, the item checkpointed and
/// released — a worker started next finishes it at once, not after the hour-long lease.
#[test]
fn sigterm_releases_the_items_and_exits_5() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let slow = documents(
        &demo(),
        dir.path(),
        &server.url(),
        &[
            "--max-docs-per-sec",
            "20",
            "--max-batch-docs",
            "5",
            "--parallel",
            "3",
            "--lease-seconds",
            "3600",
            "--checkpoint-seconds",
            "600",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = Pid::from_raw(slow.id() as i32);
    let mut slow = Reaped(Some(slow));
    wait_for(
        "three leases and some documents",
        Duration::from_secs(60),
        || {
            try_status(dir.path()).is_some_and(|st| st["items"]["leased"] == 3)
                && server.total_doc_count() >= 20
        },
    );
    let signalled = Instant::now();
    kill(pid, Signal::SIGTERM).unwrap();
    let stopped = finish(slow.0.take().unwrap(), started);
    let took = signalled.elapsed();
    assert_eq!(stopped.code, Some(5), "{stopped}");
    assert!(took < Duration::from_secs(25), "{took:?}: {stopped}");
    assert!(stopped.stderr.contains("SIGTERM"), "{stopped}");
    // Released with their checkpoints (no checkpoint was due: the one at the stop).
    let st = status(dir.path());
    assert_eq!(st["items"]["leased"], 0, "{st:#}");
    assert_eq!(st["items"]["waiting"], 3, "{st:#}");
    let checkpointed = st["docs_done"].as_u64().unwrap();
    assert!(checkpointed >= 20, "{st:#}");
    // The next worker takes over at once and finishes.
    let next = run(documents(&demo(), dir.path(), &server.url(), &[]));
    assert_eq!(next.code, Some(0), "{next}");
    assert!(next.took < Duration::from_secs(60), "{next}");
    let st = status(dir.path());
    assert_eq!(st["finished"], true, "{st:#}");
    assert_eq!(st["docs_done"], 1799, "{st:#}");
    assert_target_holds(&server, &["books", "reviews"]);
    let _: Value = st;
}

/// `rfs inspect` on what it cannot fully read: an empty directory is not a repository; a
/// broken `index.latest` is a WARNING naming it; an unreadable shard is an ERROR line and
/// exit 1 (after the whole report); an error is one line naming the path once.
#[test]
fn inspect_says_what_it_cannot_read() {
    let work = tempfile::tempdir().unwrap();
    let inspect = |repo: &Path| {
        let mut c = rfs();
        c.arg("inspect").arg(repo);
        run(c)
    };
    let empty = work.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let r = inspect(&empty);
    assert_eq!(r.code, Some(1), "{r}");
    assert!(r.stderr.contains("not a snapshot repository"), "{r}");

    let missing = work.path().join("no-such-repo");
    let r = inspect(&missing);
    assert_eq!(r.code, Some(1), "{r}");
    let line = r.stderr.trim();
    assert_eq!(line.lines().count(), 1, "{r}");
    assert_eq!(
        line.matches(missing.to_str().unwrap()).count(),
        1,
        "said twice: {r}"
    );
    assert!(line.len() < 400, "{r}");

    let repo = work.path().join("repo");
    copy_demo(&repo);
    std::fs::write(repo.join("index.latest"), b"garbage").unwrap();
    let r = inspect(&repo);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("WARNING:") && l.contains("index.latest")),
        "{r}"
    );
    assert!(!r.stdout.contains("ERROR"), "{r}");

    let (path, _, _) = shard_blobs(&repo, "books", 1)
        .into_iter()
        .max_by_key(|(_, _, len)| *len)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    let r = inspect(&repo);
    assert_eq!(r.code, Some(1), "{r}");
    let errors: Vec<&str> = r.stdout.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "{r}");
    assert!(errors[0].contains("shard 1"), "{r}");
    assert!(r.stderr.contains("could not be read"), "{r}");
    // The rest of the report is there.
    assert!(r.stdout.contains("index reviews"), "{r}");
    // Output into a pipe nobody reads (`rfs inspect REPO | head -0`): a quiet end, no
    // panic message.
    let mut child = rfs()
        .arg("inspect")
        .arg(demo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let closed = finish(child, Instant::now());
    assert!(!closed.stderr.contains("panicked"), "{closed}");
    assert!(matches!(closed.code, Some(141 | 0)), "{closed}");

    let mut c = rfs();
    c.arg("inspect").arg(&repo).arg("--json");
    let j = run(c);
    assert_eq!(j.code, Some(1), "{j}");
    let v: Value = serde_json::from_str(&j.stdout).unwrap();
    assert_eq!(v["errors"], 1, "{v:#}");
    assert!(
        v["warnings"][0].as_str().unwrap().contains("index.latest"),
        "{v:#}"
    );
}

/// Reads shard 0 of `index` without checksums: the ids skipped as bad sources, or `None`
/// when the read fails.
fn bad_sources(repo: &Path, index: &str) -> Option<Vec<String>> {
    let store = snapshot::open_blob_store(repo.to_str().unwrap(), &Default::default()).ok()?;
    let repository = snapshot::Repository::open(store).ok()?;
    let ix = repository.snapshot(SNAPSHOT).ok()?.index(index).ok()?;
    let shard = ix.open_shard(0).ok()?;
    let opts = snapshot::ReadOptions {
        verify_checksums: false,
        ..Default::default()
    };
    let reader = snapshot::ShardReader::open_with(&shard, &opts).ok()?;
    let mut docs = reader.documents(0..reader.max_doc()).ok()?;
    let mut bad = Vec::new();
    loop {
        let next = docs.next();
        bad.extend(
            docs.take_skipped()
                .into_iter()
                .filter(|s| s.reason == snapshot::SkipReason::BadSource)
                .map(|s| s.id.unwrap_or_default()),
        );
        match next {
            None => return Some(bad),
            Some(Err(_)) => return None,
            Some(Ok(_)) => {}
        }
    }
}

/// A `_source` that is not one valid JSON value (damage the checksums would have caught,
/// here switched off) is never sent: it is skipped with its reason into the failure log,
/// counted, and the run exits 7; every other document arrives.
#[test]
fn an_invalid_source_goes_to_the_failure_log_never_to_the_target() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    copy_demo(&repo);
    let (path, _, _) = shard_blobs(&repo, "reviews", 0)
        .into_iter()
        .filter(|(_, name, len)| name.ends_with(".cfs") && *len > 21_000)
        .max_by_key(|(_, _, len)| *len)
        .unwrap();
    let original = std::fs::read(&path).unwrap();
    // The first single-bit flip from byte 20000 on that breaks a document's JSON while
    // the rest of the shard still reads.
    let mut found = None;
    'search: for at in 20_000..21_000 {
        for bit in 0..8 {
            let mut bytes = original.clone();
            bytes[at] ^= 1 << bit;
            std::fs::write(&path, &bytes).unwrap();
            if let Some(bad) = bad_sources(&repo, "reviews").filter(|b| !b.is_empty()) {
                found = Some(bad);
                break 'search;
            }
        }
    }
    let bad = found.expect("no flip in 1000 bytes made an invalid _source");

    let dir = work.path().join("state");
    std::fs::create_dir(&dir).unwrap();
    let r = run(documents(
        &repo,
        &dir,
        &server.url(),
        &["--index", "reviews", "--no-verify-checksums"],
    ));
    assert_eq!(r.code, Some(7), "{r}");
    assert!(r.stderr.contains("skipped:bad_source"), "{r}");
    let log = engine::FailureLog::read(&dir.join("failures.jsonl")).unwrap();
    let logged: Vec<&str> = log
        .iter()
        .filter(|x| x.error_type == "bad_source")
        .map(|x| x.id.as_str())
        .collect();
    assert_eq!(logged, bad.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        log.iter().all(|x| x.stage != engine::Stage::Target),
        "{log:?}"
    );
    let held = server.documents("reviews");
    for id in &bad {
        assert!(!held.contains_key(id), "{id} reached the target");
    }
    assert_eq!(held.len() + bad.len(), 473);
    let st = status(&dir);
    assert_eq!(
        st["docs_skipped"].as_u64(),
        Some(bad.len() as u64),
        "{st:#}"
    );
}
