//! `rfs verify --from URL`: a migration made by `rfs copy --from` verified from the same
//! source, opened the same way — JSON lines copied into the test server, a live cluster
//! (the test server read by point in time) copied to files — and `--store` holding the
//! migration copy recorded (exit 2 when `--from` names another source). Each exact first
//! (exit 0, every document compared), then the target changed by an independent client
//! (a document put over plain HTTP; a line removed from a file): exit 6, the id named.
//! Last, the snapshot path: `rfs verify REPO --to URL --store URL` after `rfs copy`.

mod common;

use std::path::{Path, PathBuf};

use common::{demo, rfs, run, sqlite, Ran, LIVE, SNAPSHOT};
use serde_json::{json, Value};
use testkit::server::{ServerConfig, TestServer};

/// `rfs copy --from --to` with the store in `dir`, run.
fn copy(dir: &Path, from: &str, to: &str, extra: &[&str]) -> Ran {
    run(common::copy(dir, from, to, extra))
}

/// `rfs verify --from --to`, every document compared.
fn verify_from(from: &str, to: &str, extra: &[&str]) -> Ran {
    let mut c = rfs();
    c.arg("verify")
        .args(["--from", from, "--to", to, "--all"])
        .args(extra);
    run(c)
}

/// The report's columns for `index`: expected, refused, target, compared, missing,
/// different, result.
fn columns(r: &Ran, index: &str) -> Vec<String> {
    let line = r
        .stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(index))
        .unwrap_or_else(|| panic!("no line for {index}: {r}"));
    line.split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect()
}

/// Every document of an index compared, all there, nothing different.
fn assert_exact(r: &Ran, index: &str, n: usize) {
    let n = n.to_string();
    assert_eq!(
        columns(r, index),
        [n.as_str(), "0", &n, &n, "0", "0", "ok"],
        "{r}"
    );
}

/// `n` JSON-lines documents of `index` in `dir/<index>.jsonl`, as `rfs export` writes
/// them; returns the documents by id.
fn write_lines(dir: &Path, index: &str, n: usize) -> Vec<(String, Value)> {
    std::fs::create_dir_all(dir).unwrap();
    let docs: Vec<(String, Value)> = (0..n)
        .map(|i| {
            let id = format!("{index}-{i:04}");
            let source =
                json!({"n": i, "name": format!("doc {i} of {index}"), "tags": ["x", i % 5]});
            (id, source)
        })
        .collect();
    let text: String = docs
        .iter()
        .map(|(id, s)| json!({"_index": index, "_id": id, "_source": s}).to_string() + "\n")
        .collect();
    std::fs::write(dir.join(format!("{index}.jsonl")), text).unwrap();
    docs
}

/// Loads documents into `index` of `server` with a plain HTTP `_bulk`.
fn load(server: &TestServer, index: &str, n: usize) {
    let mut body = String::new();
    for i in 0..n {
        body.push_str(
            &json!({"index": {"_index": index, "_id": format!("{index}-{i:04}")}}).to_string(),
        );
        body.push('\n');
        body.push_str(&json!({"n": i, "text": "ü".repeat(i % 7)}).to_string());
        body.push('\n');
    }
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/_bulk?refresh=true", server.url()))
        .header("content-type", "application/x-ndjson")
        .body(body)
        .send()
        .unwrap();
    assert!(r.status().is_success(), "{:?}", r.text());
}

/// The one file of `index` a file sink wrote in `dir` (`<index>.<tag>.jsonl`).
fn file_of(dir: &Path, index: &str) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{index}.")) && n.ends_with(".jsonl"))
        })
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.pop().unwrap()
}

#[test]
fn json_lines_copied_to_a_cluster_verify_from_the_files_and_the_store() {
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines");
    write_lines(&lines, "alpha", 300);
    let beta = write_lines(&lines, "beta", 120);
    let from = format!("file://{}", lines.display());
    let r = copy(dir.path(), &from, &target.url(), &[]);
    assert_eq!(r.code, Some(0), "{r}");

    let r = verify_from(&from, &target.url(), &[]);
    assert_eq!(r.code, Some(0), "{r}");
    assert_exact(&r, "alpha", 300);
    assert_exact(&r, "beta", 120);
    // JSON lines keep no exact count of their own: said, and none claimed.
    assert!(r.all().contains("no exact live count"), "{r}");
    assert!(!r.all().contains("the snapshot's shards hold"), "{r}");
    // Flags that route, transform or rebuild otherwise than copy did are refused by name,
    // never ignored.
    for flags in [
        &["--rename", "alpha=gamma"][..],
        &["--multi-type", "split"],
        &["--rebuild-source", "off"],
        &["--allow-partial-source"],
        &["--prefer-recovery-source"],
    ] {
        let r = verify_from(&from, &target.url(), flags);
        assert_ne!(r.code, Some(0), "{flags:?}: {r}");
        assert!(
            r.all()
                .contains(&format!("{} does not apply with --from", flags[0])),
            "{flags:?}: {r}"
        );
    }

    // (c) The store copy used: the migration it holds is this one.
    let store = sqlite(dir.path());
    let r = verify_from(&from, &target.url(), &["--store", &store]);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(r.all().contains("holds migration"), "{r}");
    // Another source (the same lines elsewhere): exit 2, both named.
    let elsewhere = dir.path().join("elsewhere");
    write_lines(&elsewhere, "alpha", 300);
    write_lines(&elsewhere, "beta", 120);
    let other = format!("file://{}", elsewhere.display());
    let r = verify_from(&other, &target.url(), &["--store", &store]);
    assert_eq!(r.code, Some(2), "{r}");
    let both = r.all();
    assert!(
        both.contains(&lines.display().to_string())
            && both.contains(&elsewhere.display().to_string()),
        "{r}"
    );
    // The same store with another target: exit 2 too.
    let other_target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let r = verify_from(&from, &other_target.url(), &["--store", &store]);
    assert_eq!(r.code, Some(2), "{r}");

    // One document changed on the target by plain HTTP: exit 6, its id named.
    let (id, _) = &beta[57];
    let put = reqwest::blocking::Client::new()
        .put(format!("{}/beta/_doc/{id}?refresh=true", target.url()))
        .json(&json!({"n": -1, "name": "changed"}))
        .send()
        .unwrap();
    assert!(put.status().is_success(), "{:?}", put.text());
    let r = verify_from(&from, &target.url(), &[]);
    assert_eq!(r.code, Some(6), "{r}");
    assert_exact(&r, "alpha", 300);
    assert_eq!(
        columns(&r, "beta"),
        ["120", "0", "120", "120", "0", "1", "MISMATCH"],
        "{r}"
    );
    assert!(r.stdout.contains(&format!("different {id}")), "{r}");
}

#[test]
fn a_live_cluster_copied_to_files_verifies_from_the_cluster_and_a_removed_line_is_named() {
    let source = TestServer::start(ServerConfig::opensearch("2.11.0"));
    load(&source, "logs-a", 400);
    load(&source, "logs-b", 150);
    load(&source, "other", 10);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let from = format!("{}/logs-*", source.url());
    let to = format!("file://{}", out.display());
    let r = copy(dir.path(), &from, &to, &["--slices", "2"]);
    assert_eq!(r.code, Some(0), "{r}");

    let r = verify_from(&from, &to, &[]);
    assert_eq!(r.code, Some(0), "{r}");
    assert_exact(&r, "logs-a", 400);
    assert_exact(&r, "logs-b", 150);
    assert!(columns_missing(&r, "other"), "{r}");
    assert!(r.all().contains("no exact live count"), "{r}");
    let r = verify_from(&from, &to, &["--store", &sqlite(dir.path())]);
    assert_eq!(r.code, Some(0), "{r}");

    // One line removed from logs-a's file: exit 6, the document missing by id.
    let file = file_of(&out, "logs-a");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut kept: Vec<&str> = text.lines().collect();
    let removed: Value = serde_json::from_str(kept.remove(123)).unwrap();
    let id = removed["_id"].as_str().unwrap().to_string();
    std::fs::write(&file, kept.join("\n") + "\n").unwrap();
    let r = verify_from(&from, &to, &[]);
    assert_eq!(r.code, Some(6), "{r}");
    assert_eq!(
        columns(&r, "logs-a"),
        ["400", "0", "399", "400", "1", "0", "MISMATCH"],
        "{r}"
    );
    assert_exact(&r, "logs-b", 150);
    assert!(r.stdout.contains(&format!("missing   {id}")), "{r}");
}

/// No line for an index the pattern does not name.
fn columns_missing(r: &Ran, index: &str) -> bool {
    !r.stdout
        .lines()
        .any(|l| l.split_whitespace().next() == Some(index))
}

#[test]
fn a_snapshot_verified_against_a_sink_checks_the_store_copy_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let to = format!("file://{}", out.display());
    let repo = format!("file://{}", demo().display());
    let r = copy(dir.path(), &repo, &to, &["--snapshot", SNAPSHOT]);
    assert_eq!(r.code, Some(0), "{r}");
    let store = sqlite(dir.path());
    let verify = |to: &str| {
        let mut c = rfs();
        c.arg("verify").arg(demo()).args([
            "--snapshot",
            SNAPSHOT,
            "--to",
            to,
            "--store",
            &store,
            "--all",
        ]);
        run(c)
    };
    let r = verify(&to);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(r.all().contains("holds migration"), "{r}");
    for (index, n) in LIVE {
        assert_exact(&r, index, n);
    }
    // The snapshot keeps exact counts: the per-index live check is there.
    assert!(r.all().contains("the snapshot's shards hold"), "{r}");
    // The same files in another directory: not the target the store's migration wrote.
    let moved = dir.path().join("moved");
    std::fs::create_dir_all(&moved).unwrap();
    for e in std::fs::read_dir(&out).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), moved.join(e.file_name())).unwrap();
    }
    let r = verify(&format!("file://{}", moved.display()));
    assert_eq!(r.code, Some(2), "{r}");
    assert!(
        r.all().contains(&out.display().to_string())
            && r.all().contains(&moved.display().to_string()),
        "{r}"
    );
    // And verify --from the repository reads it as copy did: the same store passes.
    let r = verify_from(&repo, &to, &["--snapshot", SNAPSHOT, "--store", &store]);
    assert_eq!(r.code, Some(0), "{r}");
    for (index, n) in LIVE {
        assert_exact(&r, index, n);
    }
}
