//! Cases of issue #36 ("trust") where `rfs copy` ended 0 with documents missing, each run
//! end to end on real servers and compared document by document: a JSON-lines copy
//! restarted without `--item-bytes`; documents of two indices sharing ids into DynamoDB
//! (read back with the AWS SDK from dynalite); JSON-lines files beside `*.jsonl`;
//! `--to file://`; `--max-docs-per-sec` into files; a table URL's `key=` in `--help`.

mod common;
mod dynamo;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{copy, rfs, run, wait_for, Reaped};
use dynamo::{assert_item, aws_env, json_av, s, Sdk, SdkItem, SECRET};
use serde_json::Value;
use testkit::server::{ServerConfig, TestServer};

/// `n` documents of `index` with ids `0..n`, as JSON lines, and what each holds.
fn lines(index: &str, n: usize, tag: &str) -> (String, BTreeMap<(String, String), Value>) {
    let mut text = String::new();
    let mut want = BTreeMap::new();
    for i in 0..n {
        let source = serde_json::json!({"n": i, "from": tag, "pad": "x".repeat(i % 41)});
        text.push_str(&format!(
            "{}\n",
            serde_json::json!({"_index": index, "_id": i.to_string(), "_source": source})
        ));
        want.insert((index.to_string(), i.to_string()), source);
    }
    (text, want)
}

/// The case: a plan made with `--item-bytes 4096`, its worker killed mid-run and
/// started again without the flag. Before, the restarted worker recomputed each item's
/// byte range from its own 64 MiB and read nothing of most of them (824 of 2,000
/// documents, exit 0); now it reads the ranges the plan recorded, says so in a warning,
/// and every document arrives.
#[test]
fn a_copy_restarted_without_item_bytes_reads_the_plans_ranges() {
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("lines");
    std::fs::create_dir_all(&from).unwrap();
    let (text, want) = lines("books", 2000, "a");
    std::fs::write(from.join("books.jsonl"), &text).unwrap();
    let from = format!("file://{}", from.display());
    let common_flags = [
        "--max-batch-docs",
        "20",
        "--parallel",
        "1",
        "--checkpoint-seconds",
        "0.1",
        "--lease-seconds",
        "2",
        "--max-attempts",
        "40",
        "--control-seconds",
        "0.2",
    ];
    let mut first = copy(
        dir.path(),
        &from,
        &target.url(),
        &[
            &common_flags[..],
            &["--item-bytes", "4096", "--max-docs-per-sec", "200"],
        ]
        .concat(),
    );
    first.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut first = Reaped(Some(first.spawn().unwrap()));
    wait_for("documents on the target", Duration::from_secs(60), || {
        target.total_doc_count() > 300
    });
    let victim = first.0.as_mut().unwrap();
    victim.kill().unwrap();
    victim.wait().unwrap();
    assert!(target.total_doc_count() < 2000, "the kill came too late");

    let started = Instant::now();
    let r = run(copy(dir.path(), &from, &target.url(), &common_flags));
    assert_eq!(r.code, Some(0), "{r}");
    assert!(started.elapsed() < Duration::from_secs(120), "{r}");
    assert!(
        r.all()
            .contains("--item-bytes 67108864 is ignored: the plan was made with 4096"),
        "{r}"
    );
    assert_eq!(target.doc_count("books"), 2000);
    for ((index, id), source) in &want {
        let held = target
            .document_bytes(index, id)
            .unwrap_or_else(|| panic!("{index}/{id} missing"));
        let held: Value = serde_json::from_slice(&held).unwrap();
        assert_eq!(&held, source, "{index}/{id}");
    }
    let st = common::status(dir.path());
    assert_eq!(st["finished"], true, "{st}");
}

fn dynamo_url(d: &testkit::services::Dynalite, table: &str, extra: &str) -> String {
    format!(
        "dynamodb://{table}?region={}&endpoint={}{extra}",
        d.region(),
        d.endpoint()
    )
}

/// Two indices whose documents share every id, from JSON lines into one DynamoDB table.
/// Before, items were keyed by `_id` alone: 600 documents became 300 items, exit 0. Now
/// the table is keyed by `_index` (partition) and `_id` (sort): 600 items, each compared;
/// `verify` looks each up by the same key; a delete removes the one of its index only;
/// a table keyed by `_id` alone is refused by name before anything is written.
#[test]
fn documents_of_two_indices_sharing_ids_keep_an_item_each_in_dynamodb() {
    let Some(d) = testkit::services::Dynalite::start("lines_trust_two_indices") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let lines_dir = dir.path().join("lines");
    std::fs::create_dir_all(&lines_dir).unwrap();
    let (a, mut want) = lines("alpha", 300, "a");
    let (b, want_b) = lines("beta", 300, "b");
    want.extend(want_b);
    std::fs::write(lines_dir.join("alpha.jsonl"), a).unwrap();
    std::fs::write(lines_dir.join("beta.jsonl"), b).unwrap();
    let from = lines_dir.display().to_string();
    let to = dynamo_url(&d, "docs", "");
    let mut c = copy(dir.path(), &from, &to, &["--create-table"]);
    aws_env(&mut c);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(!r.all().contains(SECRET), "{r}");
    let sdk = Sdk::new(&d.endpoint());
    assert_eq!(
        sdk.key_schema("docs"),
        vec![
            ("_index".to_string(), "HASH".to_string(), "S".to_string()),
            ("_id".to_string(), "RANGE".to_string(), "S".to_string()),
        ]
    );
    let items = |sdk: &Sdk| -> BTreeMap<(String, String), SdkItem> {
        sdk.scan("docs")
            .into_iter()
            .map(|i| {
                let key = match (&i["_index"], &i["_id"]) {
                    (dynamo::Av::S(x), dynamo::Av::S(y)) => (x.clone(), y.clone()),
                    other => panic!("{other:?}"),
                };
                (key, i)
            })
            .collect()
    };
    let held = items(&sdk);
    assert_eq!(held.len(), 600);
    for ((index, id), source) in &want {
        let mut expected: SdkItem = source
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), json_av(v)))
            .collect();
        expected.insert("_id".into(), s(id.clone()));
        expected.insert("_index".into(), s(index.clone()));
        assert_item(id, &held[&(index.clone(), id.clone())], &expected);
    }

    // verify looks every document up by (index, id).
    let mut v = rfs();
    v.arg("verify")
        .args(["--from", &from, "--to", &to, "--all"]);
    aws_env(&mut v);
    let r = run(v);
    assert_eq!(r.code, Some(0), "{r}");

    // A delete of alpha/7 removes that item only.
    let deletes = dir.path().join("deletes");
    std::fs::create_dir_all(&deletes).unwrap();
    std::fs::write(
        deletes.join("d.jsonl"),
        "{\"_op\":\"delete\",\"_index\":\"alpha\",\"_id\":\"7\"}\n",
    )
    .unwrap();
    let run_dir = tempfile::tempdir().unwrap();
    let mut c = copy(run_dir.path(), &deletes.display().to_string(), &to, &[]);
    aws_env(&mut c);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    let after = items(&sdk);
    assert_eq!(after.len(), 599);
    assert!(!after.contains_key(&("alpha".into(), "7".into())));
    assert_eq!(
        after[&("beta".to_string(), "7".to_string())],
        held[&("beta".to_string(), "7".to_string())]
    );

    // A table keyed by `_id` alone: refused by name, nothing created or written.
    let run_dir = tempfile::tempdir().unwrap();
    let by_id = dynamo_url(&d, "by_id", "&partition-key=_id");
    let mut c = copy(run_dir.path(), &from, &by_id, &["--create-table"]);
    aws_env(&mut c);
    let r = run(c);
    assert_ne!(r.code, Some(0), "{r}");
    assert!(r.all().contains("keyed by _id without _index"), "{r}");
    let tables = sdk.rt.block_on(sdk.client.list_tables().send()).unwrap();
    assert!(
        !tables.table_names().iter().any(|t| t == "by_id"),
        "{tables:?}"
    );
}

/// Lines in every form `rfs export` and its neighbours write: before, only the `*.jsonl`
/// at the root was read (10 of 50 documents, exit 0, and verify agreed). Now `.ndjson`,
/// `.JSONL`, `.jsonl.gz`, `.jsonl.zst` and sub-directories are read; `notes.txt` is named
/// in a warning as not read.
#[test]
fn files_beside_jsonl_are_all_copied() {
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("lines");
    let want = write_lines_tree(&from);
    let r = run(copy(
        dir.path(),
        &from.display().to_string(),
        &target.url(),
        &["--item-bytes", "4096"],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert!(r.all().contains("notes.txt"), "{r}");
    assert_target_holds_exactly(&target, &want);
}

/// The same tree under a prefix of an object store (fake-gcs-server): objects under
/// deeper prefixes (`…/more/f.jsonl`, `…/more/deeper/g.jsonl.gz`) are read like a local
/// directory's sub-directories. Before, only the objects directly under the prefix were
/// read (50 of 70 documents, exit 0).
#[test]
fn lines_under_deeper_prefixes_of_an_object_store_are_all_copied() {
    let Some(gcs) = testkit::services::FakeGcs::start("lines_under_deeper_prefixes") else {
        return;
    };
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("lines");
    let want = write_lines_tree(&tree);
    gcs.create_bucket("exports");
    gcs.put_dir("exports", "runs/lines", &tree);
    let mut c = copy(
        dir.path(),
        "gs://exports/runs/lines",
        &target.url(),
        &["--item-bytes", "4096"],
    );
    c.env(
        "STORAGE_EMULATOR_HOST",
        gcs.endpoint().trim_start_matches("http://"),
    );
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(r.all().contains("notes.txt"), "{r}");
    assert_target_holds_exactly(&target, &want);
}

/// JSON lines in every form `rfs export` and its neighbours write, in `root` and two levels
/// of sub-directories, plus a `notes.txt` that is not read: 70 documents, and what each holds.
fn write_lines_tree(root: &std::path::Path) -> BTreeMap<(String, String), Value> {
    use std::io::Write;
    std::fs::create_dir_all(root.join("more/deeper")).unwrap();
    let mut want = BTreeMap::new();
    for (name, index) in [
        ("a.jsonl", "a"),
        ("b.ndjson", "b"),
        ("C.JSONL", "c"),
        ("d.jsonl.gz", "d"),
        ("e.jsonl.zst", "e"),
        ("more/f.jsonl", "f"),
        ("more/deeper/g.jsonl.gz", "g"),
    ] {
        let (text, w) = lines(index, 10, name);
        want.extend(w);
        let bytes = if name.ends_with(".gz") {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(text.as_bytes()).unwrap();
            e.finish().unwrap()
        } else if name.ends_with(".zst") {
            zstd::encode_all(text.as_bytes(), 1).unwrap()
        } else {
            text.into_bytes()
        };
        std::fs::write(root.join(name), bytes).unwrap();
    }
    std::fs::write(root.join("notes.txt"), "not lines").unwrap();
    want
}

/// The target holds exactly `want`: the same count, each document byte-compared as JSON.
fn assert_target_holds_exactly(target: &TestServer, want: &BTreeMap<(String, String), Value>) {
    assert_eq!(target.total_doc_count(), want.len() as u64);
    for ((index, id), source) in want {
        let held = target
            .document_bytes(index, id)
            .unwrap_or_else(|| panic!("{index}/{id} missing"));
        let held: Value = serde_json::from_slice(&held).unwrap();
        assert_eq!(&held, source, "{index}/{id}");
    }
}

/// `--to file://` (no path) would write into `/`: a usage error naming the sink.
#[test]
fn a_file_url_without_a_path_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("lines");
    std::fs::create_dir_all(&from).unwrap();
    std::fs::write(from.join("a.jsonl"), lines("a", 3, "x").0).unwrap();
    for to in ["file://", "file://?format=bulk", ""] {
        let r = run(copy(dir.path(), &from.display().to_string(), to, &[]));
        assert_eq!(r.code, Some(2), "{to}: {r}");
        assert!(r.stderr.contains("names no directory"), "{to}: {r}");
    }
}

/// `--max-docs-per-sec` holds for the file sink: 600 documents at 200 a second (one
/// second of burst) take two seconds at least. Before, the flag was accepted and the
/// files written at once.
#[test]
fn the_file_sink_keeps_the_document_rate() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("lines");
    std::fs::create_dir_all(&from).unwrap();
    let (text, want) = lines("a", 600, "x");
    std::fs::write(from.join("a.jsonl"), text).unwrap();
    let out = dir.path().join("out");
    let started = Instant::now();
    let r = run(copy(
        dir.path(),
        &from.display().to_string(),
        &format!("file://{}", out.display()),
        &["--max-docs-per-sec", "200", "--max-batch-docs", "20"],
    ));
    let took = started.elapsed();
    assert_eq!(r.code, Some(0), "{r}");
    assert!(took >= Duration::from_millis(1900), "took {took:?}");
    let mut held = BTreeMap::new();
    for f in std::fs::read_dir(&out).unwrap() {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
        for l in text.lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            let key = (
                v["_index"].as_str().unwrap().to_string(),
                v["_id"].as_str().unwrap().to_string(),
            );
            held.insert(key, v["_source"].clone());
        }
    }
    assert_eq!(held, want);
    eprintln!("600 documents at --max-docs-per-sec 200 into files: {took:?}");
}

/// A table URL's `key=` names a column: `--help` shows it (the password stays masked).
#[test]
fn help_shows_a_table_urls_key_column() {
    let r = run({
        let mut c = rfs();
        c.args(["copy", "--help"]);
        c
    });
    assert_eq!(r.code, Some(0), "{r}");
    assert!(r.stdout.contains("&key=COLUMN"), "{}", r.stdout);
    assert!(
        r.stdout.contains("postgres://user:***@host"),
        "{}",
        r.stdout
    );
}
