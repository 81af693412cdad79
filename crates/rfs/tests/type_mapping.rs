//! The reference tool's `TypeMappingSanitizationTransformerProvider` configuration, given
//! unchanged with `--doc-transformer-config-file`, routes each mapping type of a real
//! Elasticsearch 5.6 snapshot (one index, types `type1` and `type2`) and of a real 7.10 one
//! (typeless: `_doc`) into the test server: every routed document lands in its target index
//! with its `_source`, compared one by one with the fixture's expected documents; types no
//! rule routes are skipped and counted (`skipped:type_mapping`, in the failure log too);
//! the indices created hold the mapping `--multi-type merge` (or `split`, for one type)
//! makes; `rfs verify` with the same configuration accounts for every document; a
//! `--type-route` on a pair the provider routes is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use testkit::server::{ServerConfig, TestServer};

mod common;
use common::{rfs, show};

const SNAPSHOT_56: &str = "rfs_snapshot";
const INDEX_56: &str = "test_updates_deletes";

fn repository(test: &str, name: &str) -> Option<PathBuf> {
    let root = testkit::fixtures::require_fixtures(test)?;
    Some(root.join("snapshots").join(name))
}

/// Index → (type, id) → `_source` of the fixture's expected live documents.
fn expected(repo: &Path, snapshot: &str) -> BTreeMap<String, BTreeMap<(String, String), Value>> {
    let text = std::fs::read_to_string(repo.with_extension("expected.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut out = BTreeMap::new();
    for (index, i) in v["snapshots"][snapshot]["indices"].as_object().unwrap() {
        let docs = i["documents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let ty = d["_type"].as_str().unwrap_or("_doc").to_string();
                let id = d["_id"].as_str().unwrap().to_string();
                let source: Value = serde_json::from_str(d["_source"].as_str().unwrap()).unwrap();
                ((ty, id), source)
            })
            .collect();
        out.insert(index.clone(), docs);
    }
    out
}

/// The reference tool's configuration file for this provider, with `sourceProperties`.
fn config_file(dir: &Path, major: u64, provider: Value, more: &[Value]) -> PathBuf {
    let mut p = provider;
    p["sourceProperties"] = json!({"version": {"major": major, "minor": 0}});
    let mut list = vec![json!({"TypeMappingSanitizationTransformerProvider": p})];
    list.extend(more.iter().cloned());
    let f = dir.join("transformer.json");
    std::fs::write(&f, serde_json::to_string_pretty(&list).unwrap()).unwrap();
    f
}

struct Run {
    code: Option<i32>,
    stderr: String,
    failures: Vec<engine::FailureRecord>,
}

/// `rfs run` of `snapshot` into `target` with `extra` flags.
fn run(repo: &Path, snapshot: &str, target: &str, dir: &Path, extra: &[&str]) -> Run {
    let store = format!("sqlite://{}", dir.join("state.db").display());
    let log = dir.join("failures.jsonl");
    let out = rfs()
        .arg("run")
        .arg("--repo")
        .arg(repo)
        .args(["--snapshot", snapshot, "--target", target, "--no-progress"])
        .args(["--store", &store])
        .arg("--failure-log")
        .arg(&log)
        .args(extra)
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let failures = if log.exists() {
        engine::FailureLog::read(&log).unwrap()
    } else {
        Vec::new()
    };
    assert!(
        out.status.code().is_some(),
        "rfs run was killed: {}",
        show(&out)
    );
    Run {
        code: out.status.code(),
        stderr: format!("{}\n{stderr}", String::from_utf8_lossy(&out.stdout)),
        failures,
    }
}

/// The mapping `rfs run` creates for `index` with these flags and no transformer
/// configuration (the baseline the provider's indices are compared with).
fn baseline_mapping(repo: &Path, snapshot: &str, index: &str, flags: &[&str]) -> Value {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let r = run(repo, snapshot, &server.url(), dir.path(), flags);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    server.index(index).unwrap().mappings
}

#[test]
fn static_mappings_merge_two_types_into_one_index() {
    let Some(repo) = repository("static_mappings_merge", "ES_5_6_Updates_Deletes") else {
        return;
    };
    let want = expected(&repo, SNAPSHOT_56).remove(INDEX_56).unwrap();
    assert_eq!(want.len(), 3);
    let merged = baseline_mapping(&repo, SNAPSHOT_56, INDEX_56, &[]);
    // Both modes: the provider's routes decide, and its merged index is the same.
    for mode in ["merge", "split"] {
        let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
        let dir = tempfile::tempdir().unwrap();
        let config = config_file(
            dir.path(),
            5,
            json!({"staticMappings": {INDEX_56: {"type1": "activity", "type2": "activity"}}}),
            &[],
        );
        let r = run(
            &repo,
            SNAPSHOT_56,
            &server.url(),
            dir.path(),
            &[
                "--doc-transformer-config-file",
                config.to_str().unwrap(),
                "--multi-type",
                mode,
            ],
        );
        assert_eq!(r.code, Some(0), "{mode}: {}", r.stderr);
        assert!(r.failures.is_empty(), "{:?}", r.failures);
        assert_eq!(server.index_names(), ["activity"], "{mode}");
        let held = server.documents("activity");
        assert_eq!(held.len(), want.len(), "{mode}: {held:?}");
        for ((_, id), source) in &want {
            assert_eq!(held.get(id), Some(source), "{mode}: {id}");
        }
        assert_eq!(server.index("activity").unwrap().mappings, merged, "{mode}");
    }
}

#[test]
fn regex_mappings_route_one_type_and_skip_the_other() {
    let Some(repo) = repository("regex_mappings_route", "ES_5_6_Updates_Deletes") else {
        return;
    };
    let want = expected(&repo, SNAPSHOT_56).remove(INDEX_56).unwrap();
    let type2_alone = baseline_mapping(
        &repo,
        SNAPSHOT_56,
        "test_updates_deletes_type2",
        &["--multi-type", "split"],
    );
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    // With a JMESPath provider after it: that program still runs on every document.
    let config = config_file(
        dir.path(),
        5,
        json!({"regexMappings": [
            {"sourceIndexPattern": "test_(.*)", "sourceTypePattern": "type(2)", "targetIndexPattern": "$1-t$2"}
        ]}),
        &[json!({"JsonJMESPathTransformerProvider": {
            "script": "[*].merge(@, {document: merge(document, {via: 'jmespath'})})"
        }})],
    );
    let config_flag = ["--doc-transformer-config-file", config.to_str().unwrap()];
    let r = run(&repo, SNAPSHOT_56, &server.url(), dir.path(), &config_flag);
    // Not everything delivered: exit 7, the skipped type counted by reason.
    assert_eq!(r.code, Some(7), "{}", r.stderr);
    assert!(r.stderr.contains("1 skipped:type_mapping"), "{}", r.stderr);
    assert_eq!(server.index_names(), ["updates_deletes-t2"]);
    let held = server.documents("updates_deletes-t2");
    let mut routed = 0;
    for ((ty, id), source) in &want {
        if ty == "type2" {
            let mut with_via = source.clone();
            with_via["via"] = json!("jmespath");
            assert_eq!(held.get(id), Some(&with_via), "{id}");
            routed += 1;
        } else {
            assert!(!held.contains_key(id), "{id} is left out");
            let rec = r.failures.iter().find(|f| &f.id == id).unwrap();
            assert_eq!(rec.error_type, "type_mapping");
            assert_eq!(rec.doc_type.as_deref(), Some(ty.as_str()));
        }
    }
    assert_eq!((routed, held.len(), r.failures.len()), (2, 2, 1));
    assert_eq!(
        server.index("updates_deletes-t2").unwrap().mappings,
        type2_alone
    );

    // `rfs verify` with the same configuration expects exactly that.
    let out = rfs()
        .arg("verify")
        .arg("--repo")
        .arg(&repo)
        .args([
            "--snapshot",
            SNAPSHOT_56,
            "--target",
            &server.url(),
            "--all",
        ])
        .args(config_flag)
        .arg("--failure-log")
        .arg(dir.path().join("failures.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("complexdoc (type_mapping"), "{report}");

    // The same pair routed by --type-route too: refused, naming both, nothing written.
    let other = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir2 = tempfile::tempdir().unwrap();
    let r = run(
        &repo,
        SNAPSHOT_56,
        &other.url(),
        dir2.path(),
        &[
            "--doc-transformer-config-file",
            config.to_str().unwrap(),
            "--type-route",
            "test_updates_deletes/type1=elsewhere",
        ],
    );
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert_ne!(r.code, Some(7), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--type-route test_updates_deletes/type1=elsewhere"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("TypeMappingSanitizationTransformerProvider"),
        "{}",
        r.stderr
    );
    assert!(other.index_names().is_empty());
}

/// Elasticsearch 7 indices have no types: the provider sees `_doc`.
#[test]
fn typeless_indices_are_routed_as_doc() {
    let Some(repo) = repository("typeless_as_doc", "ES_7_10_Single") else {
        return;
    };
    let snapshot = "global_state_snapshot";
    let mut want = expected(&repo, snapshot);
    let kept = want.remove("posts_2024_01_01").unwrap();
    let dropped = want.remove("posts_2023_02_25").unwrap();
    let baseline = baseline_mapping(
        &repo,
        snapshot,
        "posts_2024_01_01",
        &["--index", "posts_2024_01_01"],
    );
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        dir.path(),
        7,
        json!({"regexMappings": [
            {"sourceIndexPattern": "posts_(2024)_.*", "sourceTypePattern": "_doc", "targetIndexPattern": "p$1"}
        ]}),
        &[],
    );
    let r = run(
        &repo,
        snapshot,
        &server.url(),
        dir.path(),
        &["--doc-transformer-config-file", config.to_str().unwrap()],
    );
    assert_eq!(r.code, Some(7), "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("{} skipped:type_mapping", dropped.len())),
        "{}",
        r.stderr
    );
    assert_eq!(server.index_names(), ["p2024"]);
    let held = server.documents("p2024");
    assert_eq!(held.len(), kept.len());
    for ((_, id), source) in &kept {
        assert_eq!(held.get(id), Some(source), "{id}");
    }
    let skipped: Vec<&str> = r.failures.iter().map(|f| f.id.as_str()).collect();
    let want_skipped: Vec<&str> = dropped.keys().map(|(_, id)| id.as_str()).collect();
    assert_eq!(skipped, want_skipped);
    assert!(r.failures.iter().all(|f| f.error_type == "type_mapping"));
    assert_eq!(server.index("p2024").unwrap().mappings, baseline);
}
