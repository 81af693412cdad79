//! `rfs table run --follow`: a PostgreSQL table (wal_level=logical, started by testkit)
//! copied into DynamoDB (dynalite) while it is written, then followed by two processes —
//! the one following is SIGKILLed and replaced — until `rfs stop`. Writes during and after
//! the backfill: updates, updates leaving a TOASTed column unchanged, deletes, inserts, key
//! changes, a transaction touching one row twice, a row inserted and deleted in one
//! transaction. At the end every item is read back with the AWS SDK for Rust and compared
//! with what PostgreSQL holds (read with a client of our own), key by key.

mod dynamo;
mod table;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dynamo::{aws_env, n, s, Av, Sdk, SdkItem};
use serde_json::Value;
use table::{pg_and_dynalite, text, Pg};

const ROWS: i64 = 20_000;

fn spawn(flags: &[String], dir: &Path, name: &str) -> Child {
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_rfs"));
    aws_env(&mut c);
    c.args(["table", "run"]).args(flags);
    if !flags.iter().any(|f| f == "--failure-log") {
        c.arg("--failure-log")
            .arg(dir.join(format!("failures-{name}.jsonl")));
    }
    c.env("RFS_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("spawn rfs table run")
}

fn status(store: &str) -> Value {
    let mut c = table::rfs();
    let out = c
        .args(["status", "--json", "--store", store])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

fn logs(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "log") {
            let t = std::fs::read_to_string(&p).unwrap_or_default();
            let tail: Vec<&str> = t.lines().rev().take(30).collect();
            out.push_str(&format!("== {}\n", p.display()));
            for l in tail.into_iter().rev() {
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    out
}

fn wait(what: &str, dir: &Path, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < limit,
            "timed out waiting for {what}\n{}",
            logs(dir)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The table as PostgreSQL holds it, as the items it should have become.
fn expected(pg: &Pg) -> BTreeMap<String, SdkItem> {
    pg.query("SELECT id, body, n, note FROM events", &[])
        .iter()
        .map(|r| {
            let id: i64 = r.get(0);
            let item: SdkItem = [
                ("id", n(id.to_string())),
                ("body", s(r.get::<_, String>(1))),
                ("n", n(r.get::<_, i32>(2).to_string())),
                (
                    "note",
                    r.get::<_, Option<String>>(3).map_or(Av::Null(true), s),
                ),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            (id.to_string(), item)
        })
        .collect()
}

/// The end of the WAL written so far (the insert position: with `synchronous_commit=off`
/// a commit is there before it is written out or flushed).
fn wal_now(pg: &Pg) -> String {
    pg.query("SELECT pg_current_wal_insert_lsn()::text", &[])[0].get(0)
}

/// Whether the slot has confirmed everything up to `lsn`.
fn confirmed_past(pg: &Pg, slot: &str, lsn: &str) -> bool {
    let rows = pg.query(
        "SELECT confirmed_flush_lsn >= $2::text::pg_lsn FROM pg_replication_slots WHERE slot_name = $1",
        &[&slot, &lsn],
    );
    rows.first().is_some_and(|r| r.get::<_, bool>(0))
}

/// Waits (at most a minute) until the slot has confirmed every change written so far.
fn caught_up(pg: &Pg, slot: &str, dir: &Path, what: &str) {
    let last = wal_now(pg);
    wait(what, dir, Duration::from_secs(60), || {
        confirmed_past(pg, slot, &last)
    });
}

/// Waits (at most a minute) for `child` to exit on its own.
fn exit_code(child: &mut Child, dir: &Path) -> Option<i32> {
    let end = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code();
        }
        assert!(end.elapsed() < Duration::from_secs(60), "{}", logs(dir));
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn pid_of(holder: &str) -> Option<u32> {
    let mut parts = holder.rsplit('-');
    parts.next()?;
    parts.next()?.parse().ok()
}

#[test]
fn a_followed_table_converges_through_a_killed_follower() {
    let test = "a_followed_table_converges_through_a_killed_follower";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    // Every 50th body is large and not compressible enough to stay inline: TOASTed.
    pg.exec(&format!(
        "CREATE TABLE events (id bigint PRIMARY KEY, body text NOT NULL, n int NOT NULL, note text);
         INSERT INTO events
         SELECT i,
                CASE WHEN i % 50 = 0
                     THEN (SELECT string_agg(md5(i::text || '/' || j::text), '') FROM generate_series(1, 300) j)
                     ELSE 'body ' || i END,
                i, NULL
         FROM generate_series(1, {ROWS}) i;"
    ));
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let store = format!("sqlite://{}", dir.join("store.db").display());
    let sink = format!(
        "dynamodb://events?region=us-east-1&endpoint={}",
        dynalite.endpoint()
    );
    let flags: Vec<String> = [
        "--source",
        &pg.url(),
        "--table",
        "events",
        "--key",
        "id",
        "--slots",
        "8",
        "--sink",
        &sink,
        "--store",
        &store,
        "--create-table",
        "--follow",
        "--follow-poll",
        "0.2",
        "--follow-round",
        "300",
        "--lease-seconds",
        "4",
        "--checkpoint-seconds",
        "0.3",
        "--control-seconds",
        "0.2",
        "--parallel",
        "2",
        "--page-rows",
        "500",
        "--max-docs-per-sec",
        "3000",
        "--no-progress",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut a = spawn(&flags, dir, "a");
    let mut b = spawn(&flags, dir, "b");

    // Writes while the backfill runs.
    wait(
        "the backfill to begin",
        dir,
        Duration::from_secs(120),
        || status(&store)["docs_done"].as_u64().unwrap_or(0) > 0,
    );
    pg.exec(
        "UPDATE events SET n = n + 1000 WHERE id % 97 = 0;
         DELETE FROM events WHERE id % 101 = 0;
         INSERT INTO events SELECT i, 'new ' || i, i, NULL FROM generate_series(20001, 20500) i;
         UPDATE events SET n = -n, note = 'toast kept' WHERE id % 50 = 0 AND id % 100 <> 0;
         UPDATE events SET id = id + 100000 WHERE id BETWEEN 500 AND 509;
         BEGIN; UPDATE events SET n = 1 WHERE id = 7; UPDATE events SET n = 2, note = 'twice' WHERE id = 7; COMMIT;
         BEGIN; INSERT INTO events VALUES (99999, 'brief', 0, NULL); DELETE FROM events WHERE id = 99999; COMMIT;",
    );
    let during = status(&store);
    assert!(
        during["follow"].is_null() || during["items"]["done"] != during["items"]["total"],
        "the writes were meant to land during the backfill: {during}"
    );

    // The backfill ends; one process follows.
    let mut holder = String::new();
    wait("a follower", dir, Duration::from_secs(300), || {
        let st = status(&store);
        holder = st["follow"]["holder"].as_str().unwrap_or("").to_string();
        st["follow"]["state"] == "following" && !holder.is_empty()
    });
    let slot = status(&store)["follow"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(slot.starts_with("rfs_"), "{slot}");

    // Writes after the backfill, in small transactions; the follower is SIGKILLed halfway
    // and replaced by a new process with the same flags.
    for i in 0..200i64 {
        let id = 1 + i * 37;
        match i % 5 {
            0 => pg.exec(&format!("UPDATE events SET n = n + 7, note = 'after {i}' WHERE id = {id}")),
            1 => pg.exec(&format!("DELETE FROM events WHERE id = {id}")),
            2 => pg.exec(&format!(
                "INSERT INTO events VALUES ({}, 'late {i}', {i}, 'late') ON CONFLICT (id) DO NOTHING",
                30_000 + i
            )),
            3 => pg.exec(&format!(
                "UPDATE events SET n = n - 1 WHERE id = {} OR id = {}",
                50 * (i + 1),
                id + 1
            )),
            _ => pg.exec(&format!(
                "UPDATE events SET id = {} WHERE id = {id}",
                200_000 + i
            )),
        }
        if i == 100 {
            let pid = pid_of(&holder).unwrap_or_else(|| panic!("holder {holder:?}"));
            let victim = if pid == a.id() { &mut a } else { &mut b };
            assert_eq!(victim.id(), pid, "the holder {holder} is one of ours");
            victim.kill().unwrap(); // SIGKILL
            victim.wait().unwrap();
            let replacement = spawn(&flags, dir, "c");
            *victim = replacement;
        }
    }
    let last = wal_now(&pg);
    wait(
        "the follower to catch up",
        dir,
        Duration::from_secs(300),
        || confirmed_past(&pg, &slot, &last),
    );
    let st = status(&store);
    let new_holder = st["follow"]["holder"].as_str().unwrap_or("").to_string();
    assert_ne!(new_holder, holder, "another process follows now: {st}");

    let mut stop = table::rfs();
    stop.args(["stop", "--store", &store]);
    table::run_ok(stop);
    for (name, c) in [("a", &mut a), ("b", &mut b)] {
        let end = Instant::now();
        let code = loop {
            if let Some(st) = c.try_wait().unwrap() {
                break st.code();
            }
            assert!(
                end.elapsed() < Duration::from_secs(60),
                "{name} did not stop\n{}",
                logs(dir)
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        assert_eq!(code, Some(0), "{name} exit code\n{}", logs(dir));
    }

    // The target equals the table, key by key.
    let want = expected(&pg);
    let sdk = Sdk::new(&dynalite.endpoint());
    let got: BTreeMap<String, SdkItem> = sdk
        .scan("events")
        .into_iter()
        .map(|i| (i["id"].as_n().unwrap().clone(), i))
        .collect();
    let missing: Vec<&String> = want.keys().filter(|k| !got.contains_key(*k)).collect();
    let extra: Vec<&String> = got.keys().filter(|k| !want.contains_key(*k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, extra {extra:?}"
    );
    for (id, w) in &want {
        dynamo::assert_item(id, &got[id], w);
    }
    assert!(want.contains_key("100500") && !want.contains_key("500"));

    // `rfs table verify --all` agrees, now that writes have stopped.
    let mut verify_flags = Vec::new();
    let mut it = flags.iter();
    while let Some(f) = it.next() {
        match f.as_str() {
            "--follow" | "--no-progress" => {}
            "--follow-poll" | "--follow-round" | "--max-docs-per-sec" => {
                it.next();
            }
            _ => verify_flags.push(f.clone()),
        }
    }
    let mut v = table::rfs();
    aws_env(&mut v);
    let out = v
        .args(["table", "verify", "--all"])
        .args(&verify_flags)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(want["7"]["note"], s("twice"));

    // What status says of the follow: every kind applied, nothing refused or skipped.
    let st = status(&store);
    let f = &st["follow"];
    let a_ = &f["applied"];
    for kind in [
        "inserts",
        "updates",
        "deletes",
        "key_changes",
        "unchanged_toast",
    ] {
        assert!(a_[kind].as_u64().unwrap_or(0) > 0, "{kind}: {f}");
    }
    assert_eq!(f["refused"], 0, "{f}");
    assert_eq!(f["skipped"], 0, "{f}");
    assert_eq!(f["state"], "stopped", "{f}");
    assert!(f["drop"].as_str().unwrap().contains(&slot), "{f}");
    let mut show = table::rfs();
    let out = show.args(["status", "--store", &store]).output().unwrap();
    let t = text(&out);
    assert!(
        t.contains("follow stopped") && t.contains("drop the slot"),
        "{t}"
    );
}

/// The table's files replayed as readers replay them: in name order, the last line of
/// each `_id` winning (a delete removing it).
fn replay_files(dir: &Path, table: &str) -> BTreeMap<String, Value> {
    let mut rows = BTreeMap::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            name.starts_with(&format!("{table}.")) && name.ends_with(".jsonl")
        })
        .collect();
    files.sort();
    for p in files {
        for line in std::fs::read_to_string(&p).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let id = v["_id"].as_str().unwrap().to_string();
            if v["_op"] == "delete" {
                rows.remove(&id);
            } else {
                rows.insert(id, v["_source"].clone());
            }
        }
    }
    rows
}

#[test]
fn follow_refusals_and_a_truncate_stop_loudly() {
    let test = "follow_refusals_and_a_truncate_stop_loudly";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let url = pg.url();
    let flags = |table: &str, out: &Path, store: &str| -> Vec<String> {
        [
            "--source",
            &url,
            "--table",
            table,
            "--key",
            "id",
            "--slots",
            "2",
            "--sink",
            out.to_str().unwrap(),
            "--store",
            store,
            "--failure-log",
            dir.join("failures.jsonl").to_str().unwrap(),
            "--no-progress",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };

    // A key that a DELETE would not carry (no primary key, replica identity DEFAULT):
    // refused before a row is read.
    pg.exec(
        "CREATE TABLE nopk (id int NOT NULL, v text);
         CREATE UNIQUE INDEX nopk_id ON nopk (id);
         INSERT INTO nopk SELECT i, 'v' FROM generate_series(1, 10) i;",
    );
    let out_dir = dir.join("nopk");
    let mut c = table::rfs();
    let out = c
        .args(["table", "run", "--follow"])
        .args(flags("nopk", &out_dir, &table::sqlite(dir, "nopk.db")))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("REPLICA IDENTITY"), "{}", text(&out));

    // A backfill without --follow cannot be followed afterwards.
    pg.exec(
        "CREATE TABLE t2 (id int PRIMARY KEY, v text);
         INSERT INTO t2 SELECT i, 'v' || i FROM generate_series(1, 100) i;",
    );
    let store = table::sqlite(dir, "late.db");
    let mut c = table::rfs();
    c.args(["table", "run"])
        .args(flags("t2", &dir.join("late"), &store));
    table::run_ok(c);
    let mut c = table::rfs();
    let out = c
        .args(["table", "run", "--follow"])
        .args(flags("t2", &dir.join("late"), &store))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("began without --follow"),
        "{}",
        text(&out)
    );

    // Followed into files; then a TRUNCATE stops the follower with an error.
    let store = table::sqlite(dir, "t2.db");
    let out_dir = dir.join("t2");
    let mut f = flags("t2", &out_dir, &store);
    f.extend(["--follow", "--follow-poll", "0.1", "--lease-seconds", "4"].map(String::from));
    let mut child = spawn(&f, dir, "t2");
    wait("a follower", dir, Duration::from_secs(120), || {
        status(&store)["follow"]["state"] == "following"
    });
    let slot = status(&store)["follow"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    pg.exec(
        "DELETE FROM t2 WHERE id = 1;
         UPDATE t2 SET v = 'changed' WHERE id = 2;
         INSERT INTO t2 VALUES (1000, 'new');
         UPDATE t2 SET id = 2000 WHERE id = 3;",
    );
    caught_up(&pg, &slot, dir, "the follower to catch up");
    let want: BTreeMap<String, Value> = pg
        .query("SELECT id, v FROM t2", &[])
        .iter()
        .map(|r| {
            let id: i32 = r.get(0);
            (
                id.to_string(),
                serde_json::json!({"id": id, "v": r.get::<_, String>(1)}),
            )
        })
        .collect();
    let got = replay_files(&out_dir, "public.t2");
    assert!(got == want, "{got:?}\n{}\n{}", status(&store), logs(dir));

    // A column added while following: the follower stops (exit 1) and gives the lease
    // back without failing the feed; a process started afterwards reads the new column
    // and applies the round the first one stopped at.
    pg.exec(
        "ALTER TABLE t2 ADD COLUMN extra text;
         UPDATE t2 SET extra = 'x', v = 'again' WHERE id = 2;",
    );
    let code = exit_code(&mut child, dir);
    assert_eq!(code, Some(1), "{}", logs(dir));
    let st = status(&store);
    assert_eq!(st["follow"]["state"], "halted", "{st}");
    assert!(
        st["follow"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("column(s) extra were added after rfs opened the table"),
        "{st}"
    );
    let mut child = spawn(&f, dir, "t2-restarted");
    caught_up(&pg, &slot, dir, "the restarted follower to catch up");
    let got = replay_files(&out_dir, "public.t2");
    assert_eq!(
        got.get("2"),
        Some(&serde_json::json!({"id": 2, "v": "again", "extra": "x"})),
        "{}",
        logs(dir)
    );
    // Rows that did not change again keep the copy made before the column existed.
    let mut before = want.clone();
    before.remove("2");
    let mut after = got.clone();
    after.remove("2");
    assert!(after == before, "{after:?}\n{}", logs(dir));
    // Every row changed by the second holder: its lines must win over the backfill's and
    // the first holder's, in the files as `rfs table verify` reads them.
    pg.exec("UPDATE t2 SET extra = 'y' || id WHERE extra IS NULL");
    caught_up(&pg, &slot, dir, "the restarted follower to catch up again");
    let want: BTreeMap<String, Value> = pg
        .query("SELECT id, v, extra FROM t2", &[])
        .iter()
        .map(|r| {
            let id: i32 = r.get(0);
            let (v, extra): (String, String) = (r.get(1), r.get(2));
            (
                id.to_string(),
                serde_json::json!({"id": id, "v": v, "extra": extra}),
            )
        })
        .collect();
    let got = replay_files(&out_dir, "public.t2");
    assert!(got == want, "{got:?}\n{}", logs(dir));
    let mut verify_flags = flags("t2", &out_dir, &store);
    verify_flags.retain(|f| f != "--no-progress");
    let mut v = table::rfs();
    let out = v
        .args(["table", "verify", "--all"])
        .args(&verify_flags)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    wait(
        "the halt's message to clear",
        dir,
        Duration::from_secs(30),
        || {
            let st = status(&store);
            st["follow"]["state"] == "following" && st["follow"]["error"].is_null()
        },
    );

    pg.exec("TRUNCATE t2");
    let code = exit_code(&mut child, dir);
    assert_eq!(code, Some(1), "{}", logs(dir));
    let st = status(&store);
    assert_eq!(st["follow"]["state"], "failed", "{st}");
    assert!(
        st["follow"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("TRUNCATE"),
        "{st}"
    );
    // The slot is left for the operator to drop (status says how).
    assert!(!pg
        .query(
            "SELECT 1 FROM pg_replication_slots WHERE slot_name = $1",
            &[&slot]
        )
        .is_empty());
}
