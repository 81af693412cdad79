//! `rfs table run --follow` into a cluster (`_bulk`, the project's test server as
//! OpenSearch 2.11): the table's changes after the backfill — an update, a delete, an
//! insert, a key change, a row touched twice in one transaction — become index and delete
//! actions, and the index ends holding exactly the table's rows, compared document by
//! document with what PostgreSQL holds (read with a client of our own).

mod table;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use table::{rfs, run_ok, sqlite, text, Pg};
use testkit::server::{ServerConfig, TestServer};

fn status(store: &str) -> Value {
    let out = rfs()
        .args(["status", "--json", "--store", store])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn wait(what: &str, log: &std::path::Path, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_followed_table_into_bulk_ends_equal_to_the_table() {
    let test = "a_followed_table_into_bulk_ends_equal_to_the_table";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE t3 (id int PRIMARY KEY, v text NOT NULL, n int);
         INSERT INTO t3 SELECT i, 'v' || i, i FROM generate_series(1, 300) i;",
    );
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let work = tempfile::tempdir().unwrap();
    let store = sqlite(work.path(), "s.db");
    let log = work.path().join("rfs.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rfs"))
        .args([
            "table",
            "run",
            "--source",
            &pg.url(),
            "--table",
            "t3",
            "--key",
            "id",
        ])
        .args(["--slots", "3", "--sink", &format!("{}/t3", server.url())])
        .args([
            "--store",
            &store,
            "--no-progress",
            "--follow",
            "--follow-poll",
            "0.1",
        ])
        .arg("--failure-log")
        .arg(work.path().join("f.jsonl"))
        .env("RFS_LOG", "info")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(work.path().join("rfs.err")).unwrap())
        .spawn()
        .unwrap();
    wait("a follower", &log, || {
        status(&store)["follow"]["state"] == "following"
    });
    let slot = status(&store)["follow"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    pg.exec(
        "UPDATE t3 SET v = 'changed' WHERE id = 10;
         DELETE FROM t3 WHERE id BETWEEN 20 AND 29;
         INSERT INTO t3 VALUES (1000, 'new', NULL);
         UPDATE t3 SET id = 2000 WHERE id = 30;
         BEGIN; UPDATE t3 SET n = -1 WHERE id = 40; UPDATE t3 SET n = -2 WHERE id = 40; COMMIT;",
    );
    let last: String = pg.query("SELECT pg_current_wal_insert_lsn()::text", &[])[0].get(0);
    wait("the follower to catch up", &log, || {
        pg.query(
            "SELECT 1 FROM pg_replication_slots WHERE slot_name = $1 AND confirmed_flush_lsn >= $2::text::pg_lsn",
            &[&slot, &last],
        )
        .len()
            == 1
    });
    let mut stop = rfs();
    stop.args(["stop", "--store", &store]);
    run_ok(stop);
    let end = Instant::now();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        assert!(end.elapsed() < Duration::from_secs(60), "did not stop");
        std::thread::sleep(Duration::from_millis(100));
    };
    let err = std::fs::read_to_string(work.path().join("rfs.err")).unwrap_or_default();
    assert_eq!(code, Some(0), "{err}");

    let want: BTreeMap<String, Value> = pg
        .query("SELECT id, v, n FROM t3", &[])
        .iter()
        .map(|r| {
            let id: i32 = r.get(0);
            let v: String = r.get(1);
            let n: Option<i32> = r.get(2);
            (id.to_string(), json!({"id": id, "v": v, "n": n}))
        })
        .collect();
    let got = server.documents("t3");
    assert_eq!(got.len(), want.len(), "document count");
    for (id, w) in &want {
        assert_eq!(got.get(id), Some(w), "document {id}");
    }
    assert!(!got.contains_key("25") && !got.contains_key("30") && got.contains_key("2000"));
    let st = status(&store);
    assert_eq!(st["follow"]["applied"]["deletes"], 10, "{st}");
    assert_eq!(st["follow"]["applied"]["key_changes"], 1, "{st}");
    assert_eq!(st["follow"]["superseded"], 1, "{st}");
    let shown = rfs().args(["status", "--store", &store]).output().unwrap();
    assert!(text(&shown).contains("follow stopped"), "{}", text(&shown));
}
