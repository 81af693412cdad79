//! The failure log in Azure Blob Storage (`--failure-log az://container/prefix/`, on
//! azurite): the demo snapshot into the test server, which refuses every document whose id
//! ends in `3`. `rfs status --failure-log` counts the prefix; once the target accepts them,
//! `rfs redrive --failure-log` delivers every refused document from it, and the target then
//! holds every live document as `rfs export` gives them, compared one by one. (S3, with a
//! killed worker and the dashboard, is `failure_log_s3.rs`.) Google Cloud Storage goes
//! through the same object-store code but has no test here: fake-gcs-server answers the
//! XML-API upload that `object_store` makes for a part (`PUT /BUCKET/OBJECT`) with 400
//! "invalid uploadType" (its XML API has no object PUT: fsouza/fake-gcs-server#331, where
//! object_store's users report the same).

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::{demo, expected_documents, rfs, show, sqlite, LIVE, SNAPSHOT};
use serde_json::Value;
use testkit::server::{Faults, ServerConfig, TestServer};

/// One run: `log_url` names the failure log; `env` reaches the object store.
fn refused_logged_and_redriven(log_url: &str, env: &[(&str, String)]) {
    let dir = tempfile::tempdir().unwrap();
    let expected = expected_documents();
    let failing: BTreeSet<String> = expected
        .keys()
        .map(|(_, id)| id.clone())
        .filter(|id| id.ends_with('3'))
        .collect();
    let refused = expected
        .keys()
        .filter(|(_, id)| failing.contains(id))
        .count();
    assert!(refused > 100, "{refused}");
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    server.set_faults(Faults {
        failing_ids: failing,
        bulk_only: true,
        ..Faults::default()
    });
    let with_env = |c: &mut Command| {
        for (k, v) in env {
            c.env(k, v);
        }
        c.env_remove("RFS_FAILURE_LOG");
    };
    let store = sqlite(dir.path());
    let mut c = rfs();
    c.arg("documents")
        .arg("--repo")
        .arg(demo())
        .args(["--snapshot", SNAPSHOT, "--target", &server.url()])
        .args(["--store", &store, "--failure-log", log_url])
        .args(["--max-batch-docs", "100", "--no-progress"]);
    with_env(&mut c);
    let out = c.output().unwrap();
    // 7: documents refused by the target.
    assert_eq!(out.status.code(), Some(7), "{}", show(&out));

    let mut st = rfs();
    st.args([
        "status",
        "--json",
        "--store",
        &store,
        "--failure-log",
        log_url,
    ]);
    with_env(&mut st);
    let out = st.output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["failed_documents_by_type"]["mapper_parsing_exception"], refused as u64,
        "{v}"
    );

    server.set_faults(Faults::default());
    let mut redrive = rfs();
    redrive.args([
        "redrive",
        "--failure-log",
        log_url,
        "--target",
        &server.url(),
    ]);
    with_env(&mut redrive);
    let out = redrive.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        show(&out).contains(&format!("{refused} documents delivered, 0 refused again")),
        "{}",
        show(&out)
    );
    for (index, live) in LIVE {
        let held = server.documents(index);
        assert_eq!(held.len(), live, "{index}");
        for ((ix, id), source) in &expected {
            if ix == index {
                assert_eq!(held.get(id), Some(source), "{ix}/{id}");
            }
        }
    }
}

#[test]
fn a_failure_log_in_azure_blob_storage_is_counted_and_redriven() {
    let Some(az) = testkit::services::Azurite::start("failure_log_in_azure") else {
        return;
    };
    az.create_container("logs");
    refused_logged_and_redriven(
        "az://logs/fleet/failures/",
        &[
            ("AZURE_STORAGE_USE_EMULATOR", "true".to_string()),
            ("AZURITE_BLOB_STORAGE_URL", az.endpoint()),
        ],
    );
}
