//! `rfs metadata evaluate|migrate` end to end: the binary against the project's test
//! server, with flags and with `RFS_*` environment variables.

use std::process::Command;

use serde_json::Value;
use testkit::server::{ServerConfig, TestServer};

fn rfs() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rfs"));
    c.env_remove("RFS_CONFIG").arg("--quiet");
    c
}

#[test]
fn evaluate_then_migrate_es_6_8_single() {
    let Some(fx) = testkit::fixtures::require_fixtures("metadata_cli") else {
        return;
    };
    let repo = fx.join("snapshots").join("ES_6_8_Single");
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));

    let out = rfs()
        .args([
            "metadata",
            "evaluate",
            "--json",
            "--snapshot",
            "global_state_snapshot",
            "--replicas",
            "0",
        ])
        .arg("--repo")
        .arg(&repo)
        .args(["--target", &server.url()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["mode"], "evaluate");
    assert_eq!(report["summary"]["create"], 3, "{report:#}");
    assert_eq!(report["summary"]["error"], 0);
    let posts = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "posts_2024_01_01")
        .unwrap();
    assert_eq!(posts["action"], "create");
    assert_eq!(posts["body"]["settings"]["index.number_of_replicas"], "0");
    assert!(
        server.write_requests().is_empty(),
        "{:?}",
        server.write_requests()
    );
    assert!(server.index_names().is_empty());

    // migrate, configured through the environment
    let out = rfs()
        .args(["metadata", "migrate"])
        .env("RFS_REPO", &repo)
        .env("RFS_SNAPSHOT", "global_state_snapshot")
        .env("RFS_TARGET", server.url())
        .env("RFS_INDEX", "regex:posts_2024.*")
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{table}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("posts_2024_01_01") && table.contains("created"),
        "{table}"
    );
    assert!(table.contains("skip-excluded"), "{table}");
    assert_eq!(server.index_names(), ["posts_2024_01_01"]);
    assert!(server
        .legacy_templates()
        .contains_key("posts_index_template"));
    let info = server.index("posts_2024_01_01").unwrap();
    assert_eq!(
        info.settings.get("index.number_of_replicas"),
        Some(&Value::from("1"))
    );
    // the test server applies the matching legacy template without resolving `{index}`
    let aliases: Vec<&String> = info
        .aliases
        .keys()
        .filter(|a| !a.contains("{index}"))
        .collect();
    assert_eq!(
        aliases,
        [
            "alias1",
            "alias2",
            "another_alias",
            "posts_2024_01_01-alias"
        ],
        "{:?}",
        info.aliases
    );

    // a second run: nothing left to create, exit 0
    let out = rfs()
        .args([
            "metadata",
            "migrate",
            "--json",
            "--snapshot",
            "global_state_snapshot",
            "--index",
            "regex:posts_2024.*",
        ])
        .arg("--repo")
        .arg(&repo)
        .args(["--target", &server.url()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["create"], 0, "{report:#}");
    assert_eq!(report["summary"]["skip_exists"], 2);
}

#[test]
fn bad_allowlist_regex_is_a_usage_error() {
    let out = rfs()
        .args([
            "metadata",
            "evaluate",
            "--repo",
            "/nonexistent",
            "--snapshot",
            "s",
            "--target",
            "http://127.0.0.1:9",
            "--index",
            "regex:(",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("allowlist regex"), "{err}");
}

#[test]
fn convert_prints_the_converted_mapping_and_every_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mapping.json");
    std::fs::write(
        &file,
        serde_json::to_vec(&serde_json::json!({"mappings": {"properties": {
            "embedding": {"type": "dense_vector", "dims": 3, "similarity": "cosine"},
            "labels": {"type": "flattened"}
        }}}))
        .unwrap(),
    )
    .unwrap();
    // Flags, JSON.
    let out = rfs()
        .args([
            "metadata", "convert", "--json", "--from", "es-8.15", "--to", "os-2.19",
        ])
        .arg("--mapping")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["blocked"], false);
    let p = &v["body"]["mappings"]["properties"];
    assert_eq!(p["embedding"]["type"], "knn_vector");
    assert_eq!(p["embedding"]["method"]["engine"], "lucene");
    assert_eq!(p["labels"]["type"], "flat_object");
    assert_eq!(v["body"]["settings"]["index.knn"], "true");
    let rules: Vec<&str> = v["conversions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"dense_vector_to_knn_vector")
            && rules.contains(&"flattened_to_flat_object"),
        "{rules:?}"
    );
    assert_eq!(v["conversions"][0]["before"]["type"], "dense_vector");

    // The environment, text, and the engine chosen by the user.
    let out = rfs()
        .args(["metadata", "convert"])
        .env("RFS_MAPPING", &file)
        .env("RFS_FROM", "es-8.15")
        .env("RFS_TO", "os-2.19")
        .env("RFS_KNN_ENGINE", "faiss")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("convert [dense_vector_to_knn_vector] embedding:"),
        "{text}"
    );
    assert!(
        text.contains("before: {") && text.contains("after:  {"),
        "{text}"
    );
    assert!(text.contains("\"engine\": \"faiss\""), "{text}");
    assert!(text.contains("\"flat_object\""), "{text}");

    // A blocked mapping: exit 1, BLOCKING named.
    std::fs::write(
        &file,
        br#"{"properties": {"body": {"type": "semantic_text", "inference_id": "e5"}}}"#,
    )
    .unwrap();
    let out = rfs()
        .args(["metadata", "convert", "--from", "es-8.15", "--to", "os-3.0"])
        .arg("--mapping")
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("BLOCKING: body: semantic_text"), "{text}");

    // A version the parser refuses: a usage error.
    let out = rfs()
        .args(["metadata", "convert", "--from", "es-8.15", "--to", "solr-9"])
        .arg("--mapping")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `--target-source enable` (or `RFS_TARGET_SOURCE`) on `metadata convert`: a disabled
/// `_source` is enabled, the conversion named; by default the mapping keeps it disabled.
#[test]
fn convert_enables_source_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mapping.json");
    std::fs::write(
        &file,
        serde_json::to_vec(&serde_json::json!({"mappings": {
            "_source": {"enabled": false},
            "properties": {"n": {"type": "long"}}
        }}))
        .unwrap(),
    )
    .unwrap();
    let convert = |env: Option<&str>| {
        let mut c = rfs();
        c.args([
            "metadata", "convert", "--json", "--from", "es-7.10", "--to", "os-2.19",
        ])
        .arg("--mapping")
        .arg(&file);
        if let Some(e) = env {
            c.env("RFS_TARGET_SOURCE", e);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let kept = convert(None);
    assert_eq!(
        kept["body"]["mappings"]["_source"]["enabled"], false,
        "{kept}"
    );
    let enabled = convert(Some("enable"));
    assert!(
        enabled["body"]["mappings"].get("_source").is_none(),
        "{enabled}"
    );
    assert_eq!(
        enabled["conversions"][0]["rule"], "enable_source",
        "{enabled}"
    );
    assert_eq!(
        enabled["body"]["mappings"]["properties"]["n"]["type"],
        "long"
    );
    // a value outside the choices is refused by the parser
    let out = rfs()
        .args([
            "metadata", "convert", "--from", "es-7.10", "--to", "os-2.19",
        ])
        .arg("--mapping")
        .arg(&file)
        .args(["--target-source", "maybe"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
