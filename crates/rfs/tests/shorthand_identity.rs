//! The migration identity each shorthand records in its store, pinned for fixed flags
//! (issue 26): `run`, `documents` and `table run` open their sources and sinks through the
//! connector registry, and a store written by an earlier binary must still resume. Each
//! test runs the real binary, reads the store's migration back with `rfs status --json`
//! and compares it, key by key, with the literal identity the earlier binary recorded.
//! (`export` and `redrive` keep their state in memory: they record none.) `rfs copy`'s
//! identities are pinned too, one per kind of source, so that moving the connectors
//! between crates cannot change what a store written today resumes.

mod common;
mod dynamo;
mod table;

use serde_json::{json, Value};
use testkit::server::{ServerConfig, TestServer};

/// `http://someone:secret@HOST:PORT/`: credentials and a trailing slash that the
/// identity leaves out.
fn with_userinfo(url: &str, path: &str) -> String {
    format!(
        "{}{path}",
        url.replacen("http://", "http://someone:secret@", 1)
    )
}

fn migration_of(store: &str) -> Value {
    let mut c = common::rfs();
    c.args(["status", "--json", "--store", store]);
    let r = common::run(c);
    assert_eq!(r.code, Some(0), "{r}");
    let st: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r}"));
    st["migration"].clone()
}

#[test]
fn documents_and_run_record_the_identities_stores_hold() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let canonical = std::fs::canonicalize(common::demo())
        .unwrap()
        .display()
        .to_string();
    let target = with_userinfo(&server.url(), "/");
    let expected = json!({
        "kind": "snapshot",
        "repository": canonical,
        "snapshot": common::SNAPSHOT,
        "target": server.url(),
    });

    let dir = tempfile::tempdir().unwrap();
    let r = common::run(common::documents(&common::demo(), dir.path(), &target, &[]));
    assert_eq!(r.code, Some(0), "{r}");
    assert!(!r.stderr.contains("secret"), "{r}");
    let m = migration_of(&common::sqlite(dir.path()));
    assert_eq!(m, expected, "documents");

    let dir = tempfile::tempdir().unwrap();
    let mut c = common::rfs();
    c.arg("run")
        .arg("--repo")
        .arg(common::demo())
        .args(["--snapshot", common::SNAPSHOT, "--target", &target])
        .args(["--store", &common::sqlite(dir.path())])
        .arg("--failure-log")
        .arg(dir.path().join("failures.jsonl"))
        .arg("--no-progress")
        .current_dir(dir.path());
    let r = common::run(c);
    assert_eq!(r.code, Some(0), "{r}");
    let m = migration_of(&common::sqlite(dir.path()));
    assert_eq!(m, expected, "run");
    common::assert_target_holds(&server, &["books", "reviews"]);
}

#[test]
fn table_run_records_the_identity_stores_hold() {
    let Some(pg) = table::Pg::start("table_run_records_the_identity_stores_hold") else {
        return;
    };
    pg.exec(
        "CREATE TABLE id_events (id bigint PRIMARY KEY, body text NOT NULL);
         INSERT INTO id_events SELECT i, 'row ' || i FROM generate_series(1, 300) AS i;",
    );
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let work = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", work.path().join("s.db").display());
    // A connection parameter that a URL serializer would spell otherwise, and an index
    // spelled with a percent escape: both as the earlier binary recorded them.
    let source = format!("{}?application_name=rfs%20identity", pg.url());
    let sink = with_userinfo(&server.url(), "/id%2Devents");
    let mut c = table::rfs();
    c.args(["table", "run", "--source", &source])
        .args(["--table", "id_events", "--key", "id", "--slots", "4"])
        .args(["--from", "10", "--until", "250"])
        .args(["--sink", &sink, "--store", &store])
        .arg("--failure-log")
        .arg(work.path().join("f.jsonl"));
    let out = table::run_ok(c);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("secret"),
        "{out:?}"
    );
    let m = migration_of(&store);
    assert_eq!(
        m,
        json!({
            "kind": "table",
            "source": source,
            "table": "public.id_events",
            "key": "id",
            "slots": "slots:4",
            "from": "10",
            "until": "250",
            "target": format!("{}/id-events", server.url()),
        })
    );
    let docs = server.documents("id-events");
    assert_eq!(docs.len(), 240, "keys 10 to 249");
    for i in 10..250 {
        assert_eq!(
            docs.get(&i.to_string()).map(|d| d["body"].clone()),
            Some(Value::from(format!("row {i}"))),
            "row {i}"
        );
    }
}

/// `rfs copy` for each kind of source (a snapshot, JSON lines, a live cluster, a table)
/// into files, a cluster and DynamoDB: the identity each records, as this binary wrote it.
#[test]
fn copy_records_the_identities_stores_hold() {
    let work = tempfile::tempdir().unwrap();
    let canonical = std::fs::canonicalize(common::demo())
        .unwrap()
        .display()
        .to_string();
    let lines = work.path().join("lines");
    let lines_url = format!("file://{}", lines.display());

    // A snapshot into files.
    let dir = tempfile::tempdir().unwrap();
    let from = format!("file://{}", common::demo().display());
    let r = common::run(common::copy(
        dir.path(),
        &from,
        &lines_url,
        &["--snapshot", common::SNAPSHOT],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(
        migration_of(&common::sqlite(dir.path())),
        json!({
            "kind": "snapshot",
            "repository": canonical,
            "snapshot": common::SNAPSHOT,
            "target": lines.display().to_string(),
        }),
        "snapshot into files"
    );

    // Those JSON lines into a cluster (credentials and the trailing slash left out).
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let target = with_userinfo(&server.url(), "/");
    let r = common::run(common::copy(
        dir.path(),
        &lines.display().to_string(),
        &target,
        &[],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert!(!r.all().contains("secret"), "{r}");
    assert_eq!(
        migration_of(&common::sqlite(dir.path())),
        json!({
            "kind": "jsonl",
            "location": lines.display().to_string(),
            "target": server.url(),
        }),
        "JSON lines into a cluster"
    );

    // That cluster's index into files.
    let dir = tempfile::tempdir().unwrap();
    let out = work.path().join("from-cluster");
    let r = common::run(common::copy(
        dir.path(),
        &with_userinfo(&server.url(), "/books"),
        &format!("file://{}", out.display()),
        &[],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(
        migration_of(&common::sqlite(dir.path())),
        json!({
            "kind": "cluster",
            "cluster": server.url(),
            "indices": "books",
            "target": out.display().to_string(),
        }),
        "a live cluster into files"
    );

    // A table into DynamoDB.
    let Some(pg) = table::Pg::start("copy_records_the_identities_stores_hold") else {
        return;
    };
    let Some(d) = testkit::services::Dynalite::start("copy_records_the_identities_stores_hold")
    else {
        return;
    };
    pg.exec(
        "CREATE TABLE id_rows (id bigint PRIMARY KEY, body text NOT NULL);
         INSERT INTO id_rows SELECT i, 'row ' || i FROM generate_series(1, 50) AS i;",
    );
    let dir = tempfile::tempdir().unwrap();
    let from = format!("{}?table=id_rows&key=id&slots=3", pg.url());
    let to = format!(
        "dynamodb://id_rows?region={}&endpoint={}",
        d.region(),
        d.endpoint()
    );
    let mut c = common::copy(dir.path(), &from, &to, &["--create-table"]);
    dynamo::aws_env(&mut c);
    let r = common::run(c);
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(
        migration_of(&common::sqlite(dir.path())),
        json!({
            "kind": "table",
            "source": pg.url(),
            "table": "public.id_rows",
            "key": "id",
            "slots": "slots:3",
            "target": to,
        }),
        "a table into DynamoDB"
    );
}
