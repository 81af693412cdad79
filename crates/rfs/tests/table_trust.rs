//! Trust in `rfs table run` / `rfs table verify` (issue #25, table side), against a real
//! PostgreSQL and dynalite started by testkit, read back with independent clients
//! (tokio-postgres here, the AWS SDK for DynamoDB): bounds before 1970, keys that are NULL
//! or have no JSON form, flags that must not panic, verify's store identity and sample
//! seed, DynamoDB key mappings that are not unique, and escape-heavy DynamoDB batches.

mod dynamo;
mod table;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Output;

use dynamo::{aws_env, Av, Sdk};
use serde_json::Value;
use table::{pg_and_dynalite, read_files, rfs, sqlite, text, Pg};

fn run(args: &[&str]) -> Output {
    let mut c = rfs();
    aws_env(&mut c);
    c.args(args).output().expect("run rfs")
}

fn status(store: &str) -> Value {
    let out = run(&["status", "--json", "--store", store]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn failure_lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `--from`/`--until` before 1970 on timestamp and date keys: every row inside the limits
/// arrives (before the fix the limits were clamped to the epoch: 0 rows before 1970).
#[test]
fn table_limits_before_1970_deliver_every_row_inside_them() {
    let test = "table_limits_before_1970_deliver_every_row_inside_them";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    // 600 rows 20 days apart from 1955: 1955 … 1987.
    pg.exec(
        "CREATE TABLE old_ts (at timestamptz PRIMARY KEY, n int NOT NULL);
         CREATE TABLE old_day (day date PRIMARY KEY, n int NOT NULL);
         INSERT INTO old_ts SELECT timestamptz '1955-01-01 06:00:00+00' + i * interval '20 days', i
           FROM generate_series(0, 599) i;
         INSERT INTO old_day SELECT date '1955-01-01' + i * 20, i FROM generate_series(0, 599) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[&str]); 4] = [
        ("old_ts", "at", &["--slot-by", "time:90d"]),
        ("old_ts", "at", &["--slots", "5"]),
        ("old_day", "day", &["--slot-by", "time:365d"]),
        ("old_day", "day", &["--slots", "3"]),
    ];
    for (i, (table, key, slots)) in cases.iter().enumerate() {
        let out_dir = work.path().join(format!("out{i}"));
        let store = sqlite(work.path(), &format!("s{i}.db"));
        let source = pg.url();
        let out = run(&[
            &[
                "table",
                "run",
                "--source",
                &source,
                "--table",
                table,
                "--key",
                key,
                "--from",
                "1960-01-01",
                "--until",
                "1985-06-01",
                "--page-rows",
                "37",
                "--sink",
                out_dir.to_str().unwrap(),
                "--store",
                &store,
            ][..],
            *slots,
        ]
        .concat());
        assert_eq!(out.status.code(), Some(0), "case {i}: {}", text(&out));
        let (got, lines) = read_files(&out_dir, &format!("public.{table}"));
        // PostgreSQL says which rows are inside the limits: their n, by the client of our own.
        let want: BTreeSet<i32> = pg
            .query(
                &format!(
                    "SELECT n FROM {table} WHERE {key} >= '1960-01-01 00:00:00+00' AND {key} < '1985-06-01 00:00:00+00'"
                ),
                &[],
            )
            .iter()
            .map(|r| r.get(0))
            .collect();
        let before_1970 = pg.query(
            &format!("SELECT count(*) FROM {table} WHERE {key} >= '1960-01-01 00:00:00+00' AND {key} < '1970-01-01 00:00:00+00'"),
            &[],
        )[0]
        .get::<_, i64>(0);
        assert!(before_1970 > 150, "the case has rows before 1970");
        assert_eq!(lines, want.len(), "case {i}: each row once");
        let have: BTreeSet<i32> = got
            .iter()
            .map(|(id, row)| {
                // The id is the key's text, and the row holds it.
                let k = row[*key].as_str().unwrap();
                assert_eq!(id, k, "case {i}");
                row["n"].as_i64().unwrap() as i32
            })
            .collect();
        assert_eq!(have, want, "case {i}");
    }
}

/// Rows whose key is NULL, ±infinity or NaN are skipped one by one (`bad_row`, counted and
/// in the failure log); every other row arrives and the exit code says 7. Before the fix
/// NULL keys stopped the run and an unrenderable key failed its whole slot.
#[test]
fn null_and_unrenderable_keys_are_skipped_rows_not_failed_slots() {
    let test = "null_and_unrenderable_keys_are_skipped_rows_not_failed_slots";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE ev_ts (at timestamptz UNIQUE, n int NOT NULL);
         INSERT INTO ev_ts SELECT timestamptz '2024-05-01 00:00:00+00' + i * interval '1 min', i
           FROM generate_series(1, 300) i;
         INSERT INTO ev_ts VALUES ('infinity', 1001), ('-infinity', 1002), (NULL, 1003), (NULL, 1004), (NULL, 1005);
         CREATE TABLE ev_num (id numeric PRIMARY KEY, n int NOT NULL);
         INSERT INTO ev_num SELECT i * 1.5, i FROM generate_series(1, 300) i;
         INSERT INTO ev_num VALUES ('NaN', 1001);",
    );
    let work = tempfile::tempdir().unwrap();
    // (table, key, slot flags, rows skipped, keys the failure log names)
    type Case<'a> = (&'a str, &'a str, &'a [&'a str], usize, &'a [&'a str]);
    let cases: [Case; 3] = [
        (
            "ev_ts",
            "at",
            &["--slots", "4"],
            5,
            &["-infinity", "infinity"],
        ),
        (
            "ev_ts",
            "at",
            &["--slot-by", "time:1h"],
            5,
            &["-infinity", "infinity"],
        ),
        ("ev_num", "id", &["--slots", "3"], 1, &["NaN"]),
    ];
    for (i, (table, key, slots, skipped, named)) in cases.iter().enumerate() {
        let out_dir = work.path().join(format!("out{i}"));
        let store = sqlite(work.path(), &format!("s{i}.db"));
        let failures = work.path().join(format!("f{i}.jsonl"));
        let source = pg.url();
        let out = run(&[
            &[
                "table",
                "run",
                "--source",
                &source,
                "--table",
                table,
                "--key",
                key,
                "--page-rows",
                "50",
                "--sink",
                out_dir.to_str().unwrap(),
                "--store",
                &store,
                "--failure-log",
                failures.to_str().unwrap(),
            ][..],
            *slots,
        ]
        .concat());
        assert_eq!(out.status.code(), Some(7), "case {i}: {}", text(&out));
        let (got, lines) = read_files(&out_dir, &format!("public.{table}"));
        assert_eq!(lines, 300, "case {i}: {}", text(&out));
        let ns: BTreeSet<i64> = got.values().map(|r| r["n"].as_i64().unwrap()).collect();
        assert_eq!(ns, (1..=300).collect(), "case {i}");
        let log = failure_lines(&failures);
        assert_eq!(log.len(), *skipped, "case {i}: {log:?}");
        assert!(log.iter().all(|l| l["error_type"] == "bad_row"), "{log:?}");
        // NULL keys have no id (the failure log writes an empty one).
        let ids: BTreeSet<&str> = log
            .iter()
            .filter_map(|l| l["id"].as_str())
            .filter(|id| !id.is_empty())
            .collect();
        assert_eq!(ids, named.iter().copied().collect(), "case {i}: {log:?}");
        let nulls = log.iter().filter(|l| l["id"] == "").count();
        assert_eq!(nulls, skipped - named.len(), "case {i}: {log:?}");
        let st = status(&store);
        assert_eq!(st["items"]["failed"], 0, "case {i}: {st}");
        assert_eq!(st["docs_done"], 300, "case {i}: {st}");
        assert_eq!(st["docs_skipped"], *skipped as u64, "case {i}: {st}");
        assert_eq!(
            st["undelivered_by_reason"]["skipped:bad_row"], *skipped as u64,
            "case {i}: {st}"
        );
    }
}

/// Flags are checked by the parser: a width unit that is not ASCII is a usage error (exit
/// 2), never a panic (exit 101).
#[test]
fn slot_widths_with_any_text_are_usage_errors_not_panics() {
    for bad in ["time:1é", "time:é", "time:1日", "time:"] {
        let out = run(&[
            "table",
            "run",
            "--source",
            "postgres://u@127.0.0.1:1/db",
            "--table",
            "t",
            "--key",
            "id",
            "--slot-by",
            bad,
            "--sink",
            "/nonexistent",
            "--store",
            "sqlite:///nonexistent/s.db",
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out));
        assert!(text(&out).contains("--slot-by"), "{bad}: {}", text(&out));
    }
}

/// `rfs table verify --store` refuses a store that holds another migration (exit 2), and
/// its random sample prints a seed that `--seed` replays.
#[test]
fn table_verify_checks_the_store_identity_and_replays_its_sample_seed() {
    let test = "table_verify_checks_the_store_identity_and_replays_its_sample_seed";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE ev (id bigint PRIMARY KEY, n int NOT NULL);
         INSERT INTO ev SELECT i, i FROM generate_series(1, 2000) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("out");
    let store = sqlite(work.path(), "s.db");
    let source = pg.url();
    let flags = |slots: &'static str| -> Vec<String> {
        [
            "--source",
            &source,
            "--table",
            "ev",
            "--key",
            "id",
            "--slots",
            slots,
            "--sink",
            out_dir.to_str().unwrap(),
            "--store",
            &store,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let args = |cmd: &str, slots: &'static str, extra: &[&str]| -> Vec<String> {
        let mut v = vec!["table".to_string(), cmd.to_string()];
        v.extend(flags(slots));
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let go = |a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        run(&a)
    };
    let out = go(args("run", "4", &[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // The same migration: verified.
    let out = go(args("verify", "4", &["--all"]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Another slotting is another migration: the store is not this one's.
    let out = go(args("verify", "5", &["--all"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("slots:4"), "{}", text(&out));

    // Doctor 200 rows of the output: a sample of 20 finds some of them, which ones
    // depends on the seed.
    let file = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let doctored: Vec<String> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["_source"]["n"].as_i64().unwrap() % 10 == 0 {
                v["_source"]["n"] = Value::from(-1);
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&file, doctored.join("\n") + "\n").unwrap();
    let seed_of = |out: &Output| -> String {
        let t = text(out);
        let line = t
            .lines()
            .find(|l| l.contains("sample drawn with seed"))
            .unwrap_or_else(|| panic!("no seed line in\n{t}"));
        line.split_whitespace().nth(4).unwrap().to_string()
    };
    let first = go(args("verify", "4", &["--sample", "20"]));
    assert_eq!(first.status.code(), Some(6), "{}", text(&first));
    let second = go(args("verify", "4", &["--sample", "20"]));
    assert_ne!(seed_of(&first), seed_of(&second), "a new seed per run");
    let seed = seed_of(&first);
    let replay = go(args("verify", "4", &["--sample", "20", "--seed", &seed]));
    assert_eq!(seed_of(&replay), seed);
    // The same rows compared: the same report, line for line.
    assert_eq!(text(&replay), text(&first));
}

/// Rows by id from PostgreSQL, as the items should hold them (numbers as text).
fn pg_events(pg: &Pg, table: &str) -> BTreeMap<String, (String, String)> {
    pg.query(&format!("SELECT id, room, body FROM {table}"), &[])
        .iter()
        .map(|r| {
            let id: i64 = r.get(0);
            let room: i32 = r.get(1);
            (id.to_string(), (room.to_string(), r.get::<_, String>(2)))
        })
        .collect()
}

/// A DynamoDB key mapping that is not unique in the table is refused before a row is read;
/// with `--allow-key-collisions` each row overwritten inside a batch is refused as
/// `key_collision` and not counted as delivered; a mapping a unique index covers runs.
/// Before the fix: exit 0, 50 items for 2,000 rows, every row counted as written.
#[test]
fn a_key_mapping_that_is_not_unique_is_refused_or_its_collisions_counted() {
    let test = "a_key_mapping_that_is_not_unique_is_refused_or_its_collisions_counted";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE ev (id bigint PRIMARY KEY, room int NOT NULL, seq int NOT NULL, body text NOT NULL,
                          UNIQUE (room, seq));
         INSERT INTO ev SELECT i, i % 50, i / 50, 'body ' || i FROM generate_series(0, 1999) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let endpoint = dynalite.endpoint();
    let source = pg.url();
    let go = |table: &str, store: &str, extra: &[&str]| {
        let sink = format!("dynamodb://{table}?region=us-east-1&endpoint={endpoint}");
        let store = sqlite(work.path(), store);
        let failures = work.path().join(format!("{table}.jsonl"));
        let mut a: Vec<&str> = vec![
            "table",
            "run",
            "--source",
            &source,
            "--table",
            "ev",
            "--key",
            "id",
            "--slots",
            "1",
            "--max-batch-docs",
            "250",
            "--create-table",
            "--sink",
            &sink,
            "--store",
            &store,
            "--failure-log",
            failures.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        (run(&a), store, failures)
    };
    let sdk = Sdk::new(&endpoint);

    // Refused before anything is read or created.
    let (out, _, _) = go("by_room", "s1.db", &["--partition-key", "room"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("not unique") && t.contains("--allow-key-collisions"),
        "{t}"
    );
    let tables = sdk
        .rt
        .block_on(sdk.client.list_tables().send())
        .unwrap()
        .table_names
        .unwrap_or_default();
    assert!(!tables.contains(&"by_room".to_string()), "{tables:?}");

    // Allowed: 50 items; 250-row batches hold 50 rooms each, so 200 rows of each of the
    // 8 batches are overwritten inside it and refused; the 400 sent are delivered.
    let (out, store, failures) = go(
        "by_room",
        "s2.db",
        &["--partition-key", "room", "--allow-key-collisions"],
    );
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    let log = failure_lines(&failures);
    assert_eq!(log.len(), 1600, "{}", text(&out));
    assert!(log.iter().all(|l| l["error_type"] == "key_collision"));
    let st = status(&store);
    assert_eq!(st["docs_done"], 400, "{st}");
    assert_eq!(st["docs_refused"], 1600, "{st}");
    assert_eq!(
        st["undelivered_by_reason"]["refused:key_collision"], 1600,
        "{st}"
    );
    let rows = pg_events(&pg, "ev");
    let items = sdk.scan("by_room");
    assert_eq!(items.len(), 50);
    let collided: BTreeSet<&str> = log.iter().map(|l| l["id"].as_str().unwrap()).collect();
    for item in &items {
        let Av::N(id) = &item["id"] else {
            panic!("{item:?}")
        };
        // Each item is one row, as PostgreSQL holds it, and not one counted as refused.
        let (room, body) = &rows[id];
        assert_eq!(item["room"], Av::N(room.clone()), "{id}");
        assert_eq!(item["body"], Av::S(body.clone()), "{id}");
        assert!(!collided.contains(id.as_str()), "{id}");
    }

    // A mapping a unique index covers: every row its own item.
    let (out, _, _) = go(
        "by_room_seq",
        "s3.db",
        &["--partition-key", "room", "--sort-key", "seq"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let items = sdk.scan("by_room_seq");
    assert_eq!(items.len(), 2000);
    for item in &items {
        let Av::N(id) = &item["id"] else {
            panic!("{item:?}")
        };
        let (room, body) = &rows[id];
        assert_eq!(item["room"], Av::N(room.clone()), "{id}");
        assert_eq!(item["body"], Av::S(body.clone()), "{id}");
    }
}

/// Rows of control characters are six times larger escaped than stored: with batches
/// allowed to be large, the writes still go in requests under DynamoDB's 16 MB (the fault
/// proxy in front of dynalite reads at most 32 MB), and every item arrives.
#[test]
fn escape_heavy_rows_fit_dynamodb_requests() {
    let test = "escape_heavy_rows_fit_dynamodb_requests";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    let proxy = testkit::dynamo_proxy::DynamoFaultProxy::start(
        dynalite.port(),
        testkit::dynamo_proxy::DynamoFaults::batch_writes(),
        1,
    );
    pg.exec(
        "CREATE TABLE heavy (id bigint PRIMARY KEY, body text NOT NULL);
         INSERT INTO heavy SELECT i, repeat(chr(1), 380000) || i FROM generate_series(1, 30) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let sink = format!(
        "dynamodb://heavy?region=us-east-1&endpoint={}",
        proxy.endpoint()
    );
    let store = sqlite(work.path(), "s.db");
    let out = run(&[
        "table",
        "run",
        "--source",
        &pg.url(),
        "--table",
        "heavy",
        "--key",
        "id",
        "--slots",
        "1",
        "--max-batch-docs",
        "30",
        "--max-batch-bytes",
        "1073741824",
        "--create-table",
        "--sink",
        &sink,
        "--store",
        &store,
        "--failure-log",
        work.path().join("f.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let items = Sdk::new(&dynalite.endpoint()).scan("heavy");
    assert_eq!(items.len(), 30);
    for item in &items {
        let Av::N(id) = &item["id"] else {
            panic!("{item:?}")
        };
        let want = format!("{}{id}", "\u{1}".repeat(380_000));
        assert!(item["body"] == Av::S(want), "item {id} differs");
    }
}

/// Scrapes `http://addr/metrics` until `child` exits; the last answer that had the sink's
/// counters, and the process's output.
fn scrape_until_exit(mut child: std::process::Child, addr: &str) -> (String, Output) {
    use std::io::{Read, Write};
    let mut last = String::new();
    loop {
        if let Ok(mut c) = std::net::TcpStream::connect(addr) {
            let _ = c.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let _ = c.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n");
            let mut body = String::new();
            let _ = c.read_to_string(&mut body);
            if body.contains("rfs_sink_throttled_total{") {
                last = body;
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    (last, child.wait_with_output().unwrap())
}

/// The value of `name{sink="…"}` in a Prometheus text.
fn sink_counter(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find(|l| l.starts_with(&format!("{name}{{sink=")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{metrics}"))
}

/// DynamoDB throttling is visible: WARN lines with counts, Prometheus counters per sink;
/// throttled writes are retried past the attempts for as long as the lease allows, then
/// the item fails saying so. Before the fix: debug lines only, no counters, and the item
/// failed after the attempts (about 45 s) without a warning.
#[test]
fn dynamodb_throttling_is_warned_counted_and_retried_as_long_as_the_lease_allows() {
    let test = "dynamodb_throttling_is_warned_counted_and_retried_as_long_as_the_lease_allows";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    let proxy = testkit::dynamo_proxy::DynamoFaultProxy::start(
        dynalite.port(),
        testkit::dynamo_proxy::DynamoFaults {
            throttling: 0.4,
            unprocessed: 0.3,
            ..testkit::dynamo_proxy::DynamoFaults::batch_writes()
        },
        5,
    );
    pg.exec(
        "CREATE TABLE ev (id bigint PRIMARY KEY, body text NOT NULL);
         INSERT INTO ev SELECT i, 'row ' || i FROM generate_series(1, 600) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let spawn = |table: &str, store: &str, extra: &[&str]| {
        let sink = format!(
            "dynamodb://{table}?region=us-east-1&endpoint={}",
            proxy.endpoint()
        );
        let mut c = rfs();
        aws_env(&mut c);
        c.args([
            "table",
            "run",
            "--source",
            &pg.url(),
            "--table",
            "ev",
            "--key",
            "id",
            "--slots",
            "2",
            "--max-batch-docs",
            "50",
            "--create-table",
            "--sink",
            &sink,
            "--store",
            &sqlite(work.path(), store),
            "--metrics-addr",
            &addr,
            "--failure-log",
            "/dev/null",
        ])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
        c.spawn().unwrap()
    };

    // Throttled often, but not for long: everything arrives, and the pushback shows.
    let (metrics, out) = scrape_until_exit(spawn("events", "s1.db", &[]), &addr);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("DynamoDB is pushing back"), "{t}");
    assert!(t.contains("throttled answers"), "{t}");
    let items = Sdk::new(&dynalite.endpoint()).scan("events");
    assert_eq!(items.len(), 600);
    let rows: BTreeMap<String, String> = pg
        .query("SELECT id, body FROM ev", &[])
        .iter()
        .map(|r| (r.get::<_, i64>(0).to_string(), r.get(1)))
        .collect();
    for item in &items {
        let Av::N(id) = &item["id"] else {
            panic!("{item:?}")
        };
        assert_eq!(item["body"], Av::S(rows[id].clone()), "{id}");
    }
    let counts = proxy.counts();
    assert!(counts.throttling > 0, "{counts:?}");
    assert!(
        sink_counter(&metrics, "rfs_sink_throttled_total") > 0,
        "{metrics}"
    );
    assert!(
        sink_counter(&metrics, "rfs_sink_retries_total") > 0,
        "{metrics}"
    );
    assert!(
        metrics.contains("rfs_sink_unprocessed_total{sink=\"dynamodb://events?"),
        "{metrics}"
    );
    // Stored with the items' counts: `rfs status` shows them, apart from undelivered rows.
    let st = status(&sqlite(work.path(), "s1.db"));
    assert!(
        st["sink_pushback"]["throttled"].as_u64().unwrap() > 0,
        "{st}"
    );
    assert!(st["sink_pushback"]["retries"].as_u64().unwrap() > 0, "{st}");
    assert_eq!(st["docs_done"], 600, "{st}");
    assert_eq!(st["undelivered_by_reason"], serde_json::json!({}), "{st}");

    // `rfs copy` into DynamoDB shows the same counters: the job takes them from the sink
    // (before: only `table run` registered them).
    let copy = {
        let mut c = rfs();
        aws_env(&mut c);
        c.args([
            "copy",
            "--from",
            &format!("{}?table=ev&key=id", pg.url()),
            "--to",
            &format!(
                "dynamodb://events_copy?region=us-east-1&endpoint={}",
                proxy.endpoint()
            ),
            "--create-table",
            "--max-batch-docs",
            "50",
            "--store",
            &sqlite(work.path(), "s3.db"),
            "--metrics-addr",
            &addr,
            "--failure-log",
            "/dev/null",
            "--no-progress",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
        c.spawn().unwrap()
    };
    let (metrics, out) = scrape_until_exit(copy, &addr);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        Sdk::new(&dynalite.endpoint()).scan("events_copy").len(),
        600
    );
    assert!(
        metrics.contains("rfs_sink_throttled_total{sink=\"dynamodb://events_copy?"),
        "{metrics}"
    );

    // Throttled without end: retried well past the 10 attempts for as long as a 12 s lease
    // allows (7 s), then the item fails with a WARN saying why.
    proxy.set_faults(testkit::dynamo_proxy::DynamoFaults {
        throttling: 1.0,
        ..testkit::dynamo_proxy::DynamoFaults::batch_writes()
    });
    let before = proxy.counts().throttling;
    let started = std::time::Instant::now();
    let (_, out) = scrape_until_exit(
        spawn(
            "events2",
            "s2.db",
            &[
                "--lease-seconds",
                "12",
                "--max-attempts",
                "1",
                "--parallel",
                "1",
            ],
        ),
        &addr,
    );
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("as long as the lease allows"), "{t}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(7),
        "{t}"
    );
    assert!(proxy.counts().throttling - before > 10, "past the attempts");
}

/// Time slots need every key to carry its time where the bounds expect it: a uuid key that
/// is not version 7, or ULID text in lower case (C collation sorts it after every upper-case
/// bound), stops the run with the key named; quantile slots take them all. Before the fix:
/// uuid keys were taken as v7 unchecked and lower-case ULIDs fell outside their slots.
#[test]
fn time_slots_refuse_keys_that_do_not_carry_their_time_as_the_bounds_expect() {
    let test = "time_slots_refuse_keys_that_do_not_carry_their_time_as_the_bounds_expect";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    let mut lower = Vec::new();
    for i in 0..200u64 {
        let u = table::ulid(1_714_521_600_000 + i * 60_000, u128::from(i) * 7919);
        // Half upper case, half lower case (a mix, as written by two applications).
        lower.push(if i % 2 == 0 { u } else { u.to_lowercase() });
    }
    pg.exec(
        "CREATE TABLE ev_v4 (id uuid PRIMARY KEY, n int NOT NULL);
         INSERT INTO ev_v4 SELECT md5(i::text)::uuid, i FROM generate_series(1, 200) i;
         CREATE TABLE ev_ulid (id text COLLATE \"C\" PRIMARY KEY, n int NOT NULL);",
    );
    pg.query(
        "INSERT INTO ev_ulid SELECT id, i FROM unnest($1::text[]) WITH ORDINALITY AS u(id, i)",
        &[&lower],
    );
    let work = tempfile::tempdir().unwrap();
    for (i, (table, why)) in [("ev_v4", "UUIDv7"), ("ev_ulid", "lower case")]
        .iter()
        .enumerate()
    {
        let out_dir = work.path().join(format!("out{i}"));
        let source = pg.url();
        let flags = |store: &str| -> Vec<String> {
            [
                "table",
                "run",
                "--source",
                &source,
                "--table",
                table,
                "--key",
                "id",
                "--sink",
                out_dir.to_str().unwrap(),
                "--store",
                &sqlite(work.path(), store),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        };
        let mut a = flags(&format!("t{i}.db"));
        a.extend(["--slot-by".to_string(), "time:1h".to_string()]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = run(&a);
        assert_eq!(out.status.code(), Some(1), "{table}: {}", text(&out));
        assert!(text(&out).contains(why), "{table}: {}", text(&out));
        // Quantile slots compare keys as the table does: every row arrives.
        let mut a = flags(&format!("q{i}.db"));
        a.extend(["--slots".to_string(), "4".to_string()]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = run(&a);
        assert_eq!(out.status.code(), Some(0), "{table}: {}", text(&out));
        let (got, lines) = read_files(&out_dir, &format!("public.{table}"));
        assert_eq!(lines, 200, "{table}");
        let ns: BTreeSet<i64> = got.values().map(|r| r["n"].as_i64().unwrap()).collect();
        assert_eq!(ns, (1..=200).collect(), "{table}");
    }
}
