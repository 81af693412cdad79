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
