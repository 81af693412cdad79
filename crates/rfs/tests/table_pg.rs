//! `rfs table run` / `rfs table verify` against a real PostgreSQL (testkit's launcher), into
//! the file sink and the `_bulk` sink (testkit-server and osmem-server). What the sinks wrote
//! is read back and compared row by row with what PostgreSQL holds, queried here with a
//! client of our own.

mod table;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;
use table::{micros, read_files, read_raw_sources, rfs, run_ok, sqlite, ulid, uuid_v7, Pg};
use testkit::server::{ServerConfig, TestServer};

const BASE_MS: u64 = 1_714_521_600_000; // 2024-05-01T00:00:00Z

/// Expected rows by id: the table's rows rendered here independently (PostgreSQL's own
/// `to_jsonb`, with the timestamp columns as Unix microseconds).
fn pg_rows(pg: &Pg, table: &str, key: &str, ts_cols: &[&str]) -> BTreeMap<String, Value> {
    let times: Vec<String> = ts_cols
        .iter()
        .map(|c| format!("'{c}', (extract(epoch FROM {c}) * 1000000)::int8"))
        .collect();
    let sql = format!(
        "SELECT {key}::text, (to_jsonb(t) || jsonb_build_object({}))::text FROM {table} t",
        times.join(", ")
    );
    pg.query(&sql, &[])
        .iter()
        .map(|r| {
            let id: String = r.get(0);
            (id, serde_json::from_str(r.get::<_, &str>(1)).unwrap())
        })
        .collect()
}

fn normalise_times(mut v: Value, ts_cols: &[&str]) -> Value {
    for c in ts_cols {
        let s = v[*c]
            .as_str()
            .unwrap_or_else(|| panic!("{c} of {v}"))
            .to_string();
        v[*c] = Value::from(micros(&s));
    }
    v
}

fn micros_or_0(k: &str, ts: &[&str]) -> i64 {
    if ts.is_empty() {
        0
    } else {
        micros(k)
    }
}

#[test]
fn key_kinds_by_time_and_quantile_slots_into_files() {
    let Some(pg) = Pg::start("key_kinds_by_time_and_quantile_slots_into_files") else {
        return;
    };
    let n = 3000u64;
    // ULID text, UUIDv7 (uuid), bigint and timestamptz keys; rows over ~5 hours.
    pg.exec(
        "CREATE TABLE ev_ulid (id text PRIMARY KEY, room int NOT NULL, body text);
         CREATE TABLE ev_uuid (id uuid PRIMARY KEY, room int NOT NULL, body text);
         CREATE TABLE ev_big (id bigint PRIMARY KEY, room int NOT NULL, body text);
         CREATE TABLE ev_ts (at timestamptz PRIMARY KEY, room int NOT NULL, body text);",
    );
    let mut ulids = Vec::new();
    let mut uuids = Vec::new();
    for i in 0..n {
        let ms = BASE_MS + i * 6_000 + (i % 7);
        let r = u128::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834);
        ulids.push(ulid(ms, r));
        uuids.push(uuid_v7(ms, r));
    }
    pg.query(
        "INSERT INTO ev_ulid SELECT id, i % 10, 'b' || i FROM unnest($1::text[]) WITH ORDINALITY AS u(id, i)",
        &[&ulids],
    );
    pg.query(
        "INSERT INTO ev_uuid SELECT id::uuid, i % 10, 'b' || i FROM unnest($1::text[]) WITH ORDINALITY AS u(id, i)",
        &[&uuids],
    );
    pg.exec(&format!(
        "INSERT INTO ev_big SELECT i * 7, i % 10, 'b' || i FROM generate_series(1, {n}) i;
         INSERT INTO ev_ts SELECT timestamptz '2024-05-01 00:00:00+00' + i * interval '6 s' + i * interval '1 us',
                                  i % 10, 'b' || i FROM generate_series(0, {n} - 1) i;"
    ));
    let work = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[&str], &[&str]); 6] = [
        ("ev_ulid", "id", &["--slot-by", "time:1h"], &[]),
        ("ev_uuid", "id", &["--slot-by", "time:1h"], &[]),
        ("ev_ts", "at", &["--slot-by", "time:1h"], &["at"]),
        ("ev_big", "id", &["--slots", "7"], &[]),
        (
            "ev_ulid",
            "id",
            &["--slots", "5", "--order", "newest-first"],
            &[],
        ),
        ("ev_ts", "at", &["--slots", "3"], &["at"]),
    ];
    for (i, (table, key, slots, ts)) in cases.iter().enumerate() {
        let out_dir = work.path().join(format!("out{i}"));
        let store = sqlite(work.path(), &format!("s{i}.db"));
        let mut c = rfs();
        c.args([
            "table",
            "run",
            "--source",
            &pg.url(),
            "--table",
            table,
            "--key",
            key,
        ])
        .args(*slots)
        .args(["--sink", out_dir.to_str().unwrap(), "--store", &store])
        .args([
            "--parallel",
            "3",
            "--page-rows",
            "97",
            "--max-batch-docs",
            "50",
        ])
        .arg("--failure-log")
        .arg(work.path().join(format!("f{i}.jsonl")));
        run_ok(c);
        // Files and documents are named after the table as the catalog qualifies it.
        let (got, lines) = read_files(&out_dir, &format!("public.{table}"));
        assert_eq!(lines as u64, n, "case {i}: every row written once");
        let expected = pg_rows(&pg, table, key, ts);
        assert_eq!(got.len(), expected.len(), "case {i}");
        // Timestamp keys: the file's id is the RFC 3339 key; match by instant.
        let by_instant: BTreeMap<i64, &String> =
            got.keys().map(|k| (micros_or_0(k, ts), k)).collect();
        for (id, want) in &expected {
            let id = if ts.is_empty() {
                id.clone()
            } else {
                by_instant
                    .get(&want[ts[0]].as_i64().unwrap())
                    .unwrap_or_else(|| panic!("case {i}: no row for {id}"))
                    .to_string()
            };
            let have = normalise_times(got[&id].clone(), ts);
            assert_eq!(&have, want, "case {i}: row {id}");
        }
        // Slots: as many items as the rule gives, all complete.
        let st = run_ok({
            let mut c = rfs();
            c.args(["status", "--json", "--store", &store]);
            c
        });
        let st: Value = serde_json::from_slice(&st.stdout).unwrap();
        let items = &st["items"];
        assert_eq!(items["done"], items["total"], "case {i}: {st}");
        let total = items["total"].as_u64().unwrap();
        match slots[0] {
            // 3000 rows 6 s apart from midnight: five hours → 5 hourly slots.
            "--slot-by" => assert_eq!(total, 5, "case {i}"),
            _ => {
                let want: u64 = slots[1].parse().unwrap();
                assert!(
                    total >= want - 1 && total <= want,
                    "case {i}: {total} slots for {want}"
                );
            }
        }
        // `rfs table verify --all` agrees.
        let mut v = rfs();
        v.args([
            "table",
            "verify",
            "--source",
            &pg.url(),
            "--table",
            table,
            "--key",
            key,
        ])
        .args(*slots)
        .args([
            "--sink",
            out_dir.to_str().unwrap(),
            "--store",
            &store,
            "--all",
        ]);
        let out = run_ok(v);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("verified")
                || String::from_utf8_lossy(&out.stdout).contains("verified"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn every_column_type_converts_and_bad_rows_are_logged_with_their_keys() {
    let Some(pg) = Pg::start("every_column_type_converts_and_bad_rows_are_logged") else {
        return;
    };
    pg.exec(
        "CREATE TYPE mood AS ENUM ('sad', 'ok');
         CREATE TABLE every (
            id bigint PRIMARY KEY, t text, vc varchar(10), ch char(3), u uuid, i2 smallint,
            i4 integer, i8 bigint, f4 real, f8 double precision, n numeric, b boolean,
            by bytea, ts timestamp, tz timestamptz, d date, j json, jb jsonb, arr int[],
            iv interval, m mood, nul text);
         INSERT INTO every VALUES
          (1, 'héllo \"q\"\n', 'v', 'ab', '0190f1a2-0000-7000-8000-00000000abcd', -32768, 2147483647,
           -9223372036854775808, 0.1, 1e300, 12345678901234567890.000100, true, '\\x00ff10'::bytea,
           '2024-05-01 12:00:00.5', '2024-05-01 12:00:00+02', '2024-02-29', '{\"a\":\n [1, 2.50]}',
           '{\"b\": {\"c\": null}}', '{1,2,3}', '1 day 02:00:00', 'ok', NULL),
          (2, '', NULL, NULL, NULL, 0, 0, 0, -0.5, 2.5, -0.001, false, ''::bytea,
           '1999-12-31 23:59:59.999999', '1970-01-01 00:00:00+00', '0001-01-01', '[]', '\"s\"',
           '{}', '0', 'sad', NULL),
          (3, 'bad', NULL, NULL, NULL, 0, 0, 0, 0, 'NaN', 1, true, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, NULL),
          (4, 'bad too', NULL, NULL, NULL, 0, 0, 0, 0, 0, 'NaN', true, NULL, NULL, 'infinity',
           NULL, NULL, NULL, NULL, NULL, NULL, NULL),
          (5, 'ok', NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, true, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, NULL);",
    );
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("out");
    let flog = work.path().join("failures.jsonl");
    let mut c = rfs();
    c.args([
        "table",
        "run",
        "--source",
        &pg.url(),
        "--table",
        "public.every",
        "--key",
        "id",
    ])
    .args(["--slots", "2", "--sink"])
    .arg(format!("file://{}", out_dir.display()))
    .args(["--store", &sqlite(work.path(), "s.db"), "--failure-log"])
    .arg(&flog);
    let out = c.output().unwrap();
    // Two rows cannot be converted: the migration finishes with exit 7 and says so.
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(&flog).unwrap();
    let bad: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut keys: Vec<&str> = bad.iter().map(|r| r["id"].as_str().unwrap()).collect();
    keys.sort();
    assert_eq!(keys, ["3", "4"], "{log}");
    assert!(log.contains("bad_row"), "{log}");
    assert!(log.contains("f8") && log.contains("n"), "{log}");

    let raw = read_raw_sources(&out_dir, "public.every");
    assert_eq!(raw.keys().collect::<Vec<_>>(), ["1", "2", "5"]);
    // Compare each column with PostgreSQL, queried independently.
    for id in ["1", "2", "5"] {
        let r = &pg.query(
            "SELECT t, vc, ch, u::text, i2, i4, i8, f4, f8, n::text, b, by, d::text,
                    (extract(epoch FROM ts) * 1000000)::int8, (extract(epoch FROM tz) * 1000000)::int8,
                    j::text, jb::text, arr::text, iv::text, m::text, nul
             FROM every WHERE id = $1::text::int8",
            &[&id],
        )[0];
        let s = &raw[id];
        let json = |c: &str| -> Value { serde_json::from_str(&s[c]).unwrap() };
        let text = |c: &str, i: usize| {
            assert_eq!(
                json(c),
                r.get::<_, Option<String>>(i)
                    .map_or(Value::Null, Value::from),
                "{id}.{c}"
            );
        };
        text("t", 0);
        text("vc", 1);
        text("ch", 2);
        text("u", 3);
        text("d", 12);
        text("arr", 17);
        text("iv", 18);
        text("m", 19);
        text("nul", 20);
        assert_eq!(json("i2"), Value::from(r.get::<_, i16>(4)), "{id}.i2");
        assert_eq!(json("i4"), Value::from(r.get::<_, i32>(5)), "{id}.i4");
        assert_eq!(json("i8"), Value::from(r.get::<_, i64>(6)), "{id}.i8");
        assert_eq!(
            s["f4"].parse::<f32>().unwrap(),
            r.get::<_, f32>(7),
            "{id}.f4"
        );
        assert_eq!(
            s["f8"].parse::<f64>().unwrap(),
            r.get::<_, f64>(8),
            "{id}.f8"
        );
        // numeric: exactly PostgreSQL's digits.
        assert_eq!(s["n"], r.get::<_, String>(9), "{id}.n");
        assert_eq!(json("b"), Value::from(r.get::<_, bool>(10)), "{id}.b");
        match r.get::<_, Option<Vec<u8>>>(11) {
            Some(bytes) => assert_eq!(
                base64::engine::general_purpose::STANDARD
                    .decode(json("by").as_str().unwrap())
                    .unwrap(),
                bytes,
                "{id}.by"
            ),
            None => assert_eq!(json("by"), Value::Null),
        }
        for (c, i) in [("ts", 13), ("tz", 14)] {
            match r.get::<_, Option<i64>>(i) {
                Some(m) => {
                    let t = json(c);
                    let t = t.as_str().unwrap();
                    assert!(t.ends_with('Z'), "{id}.{c} in UTC: {t}");
                    assert_eq!(micros(t), m, "{id}.{c}");
                }
                None => assert_eq!(json(c), Value::Null),
            }
        }
        for (c, i) in [("j", 15), ("jb", 16)] {
            let want: Value = r
                .get::<_, Option<String>>(i)
                .map_or(Value::Null, |t| serde_json::from_str(&t).unwrap());
            assert_eq!(json(c), want, "{id}.{c}");
        }
    }
    assert_eq!(raw["1"]["n"], "12345678901234567890.000100");
    assert_eq!(raw["1"]["tz"], "\"2024-05-01T10:00:00Z\"");
}

#[test]
fn a_killed_worker_resumes_after_its_last_acknowledged_key() {
    let Some(pg) = Pg::start("a_killed_worker_resumes_after_its_last_acknowledged_key") else {
        return;
    };
    let n = 200_000u64;
    pg.exec(&format!(
        "CREATE TABLE big (id bigint PRIMARY KEY, pad text NOT NULL);
         INSERT INTO big SELECT i, repeat('x', 100) || i FROM generate_series(1, {n}) i;
         ANALYZE big;"
    ));
    let work = tempfile::tempdir().unwrap();
    let out_dir = work.path().join("out");
    let store = sqlite(work.path(), "s.db");
    let args = |c: &mut std::process::Command| {
        c.args([
            "table",
            "run",
            "--source",
            &pg.url(),
            "--table",
            "big",
            "--key",
            "id",
        ])
        .args([
            "--slots",
            "1",
            "--sink",
            out_dir.to_str().unwrap(),
            "--store",
            &store,
        ])
        .args([
            "--parallel",
            "1",
            "--max-batch-docs",
            "20",
            "--page-rows",
            "100",
        ])
        .args(["--checkpoint-seconds", "0.05"])
        .args(["--lease-seconds", "2"])
        .arg("--failure-log")
        .arg(work.path().join("f.jsonl"));
    };
    let mut c = rfs();
    args(&mut c);
    let mut child = c.spawn().unwrap();
    // SIGKILL once about a fifth of the rows (~150 bytes a line) is on disk.
    let written = || -> u64 {
        std::fs::read_dir(&out_dir)
            .map(|d| {
                d.flatten()
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while written() < n * 150 / 5 {
        assert!(Instant::now() < deadline, "nothing written");
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before the kill"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let (_, before) = read_files(&out_dir, "public.big");
    assert!(
        before > 100 && (before as u64) < n,
        "killed mid-way: {before} rows written"
    );
    // The checkpoint in the store: a key cursor somewhere in what was written.
    let st: Value = serde_json::from_slice(
        &run_ok({
            let mut c = rfs();
            c.args(["status", "--json", "--store", &store]);
            c
        })
        .stdout,
    )
    .unwrap();
    let done = st["docs_done"].as_u64().unwrap();
    assert!(
        done > 0 && done <= before as u64,
        "checkpointed {done} of {before}"
    );
    // Let the dead worker's lease expire, then run again.
    std::thread::sleep(Duration::from_secs(3));
    let started = Instant::now();
    let mut c = rfs();
    args(&mut c);
    run_ok(c);
    let (rows, lines) = read_files(&out_dir, "public.big");
    assert_eq!(rows.len() as u64, n, "every row present");
    // Only what was written after the last checkpoint is written twice.
    let again = lines as u64 - n;
    assert!(
        again <= before as u64 - done + 20,
        "{again} rows written twice; {before} written before the kill, {done} acknowledged"
    );
    let expected = pg_rows(&pg, "big", "id", &[]);
    assert_eq!(rows, expected);
    eprintln!("resumed in {:?}", started.elapsed());
}

#[test]
fn bulk_sink_into_testkit_server_and_verify_finds_a_doctored_target() {
    let Some(pg) = Pg::start("bulk_sink_into_testkit_server") else {
        return;
    };
    let n = 1500u64;
    pg.exec(
        "CREATE TABLE room_events (id text PRIMARY KEY, room int NOT NULL, at timestamptz NOT NULL,
                                   payload jsonb, blob bytea);",
    );
    let ids: Vec<String> = (0..n)
        .map(|i| ulid(BASE_MS + i * 10_000, u128::from(i) * 0x1234_5678_9abc_def1))
        .collect();
    pg.query(
        "INSERT INTO room_events
         SELECT id, i % 13, timestamptz '2024-05-01 00:00:00+00' + i * interval '10 s',
                jsonb_build_object('n', i, 'tags', jsonb_build_array('a', i)), int4send(i::int4)
         FROM unnest($1::text[]) WITH ORDINALITY AS u(id, i)",
        &[&ids],
    );
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let work = tempfile::tempdir().unwrap();
    let store = sqlite(work.path(), "s.db");
    let sink = format!("{}/events", server.url());
    let base = |c: &mut std::process::Command| {
        c.args([
            "--source",
            &pg.url(),
            "--table",
            "room_events",
            "--key",
            "id",
        ])
        .args(["--slot-by", "time:1h", "--sink", &sink, "--store", &store]);
    };
    let mut c = rfs();
    c.args(["table", "run"]);
    base(&mut c);
    c.args(["--parallel", "2", "--failure-log"])
        .arg(work.path().join("f.jsonl"));
    run_ok(c);
    let docs = server.documents("events");
    let expected = pg_rows(&pg, "room_events", "id", &["at"]);
    assert_eq!(docs.len(), expected.len());
    for (id, want) in &expected {
        let have = docs.get(id).unwrap_or_else(|| panic!("{id} missing"));
        let mut have = normalise_times(have.clone(), &["at"]);
        // bytea: base64 here, PostgreSQL's to_jsonb writes hex.
        let b = base64::engine::general_purpose::STANDARD
            .decode(have["blob"].as_str().unwrap())
            .unwrap();
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        have["blob"] = Value::from(format!("\\x{hex}"));
        assert_eq!(&have, want, "row {id}");
    }
    // verify: clean.
    let mut v = rfs();
    v.args(["table", "verify", "--all"]);
    base(&mut v);
    run_ok(v);
    // Doctor the target: one document changed, one removed.
    let changed = &ids[10];
    let removed = &ids[700];
    let client = reqwest::blocking::Client::new();
    let r = client
        .put(format!("{}/events/_doc/{changed}", server.url()))
        .json(&serde_json::json!({"id": changed, "room": 99}))
        .send()
        .unwrap();
    assert!(r.status().is_success());
    let r = client
        .delete(format!("{}/events/_doc/{removed}", server.url()))
        .send()
        .unwrap();
    assert!(r.status().is_success());
    let mut v = rfs();
    v.args(["table", "verify", "--all"]);
    base(&mut v);
    let out = v.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(6), "{text}");
    assert!(text.contains(&format!("  {removed}")), "{text}");
    assert!(text.contains(&format!("  {changed}: field")), "{text}");
    assert!(
        text.contains("1 rows missing") && text.contains("1 rows different"),
        "{text}"
    );
}

#[test]
fn bulk_sink_into_osmem_reads_back_equal() {
    let Some(pg) = Pg::start("bulk_sink_into_osmem_reads_back_equal") else {
        return;
    };
    let Some(os) = testkit::services::Osmem::start("bulk_sink_into_osmem_reads_back_equal") else {
        return;
    };
    pg.exec(
        "CREATE TABLE orders (id uuid PRIMARY KEY, amount numeric NOT NULL, note text, at timestamp);
         INSERT INTO orders
         SELECT ('0190f1a2-' || lpad(to_hex(i), 4, '0') || '-7000-8000-000000000000')::uuid,
                (i * 1.25)::numeric, 'n' || i, timestamp '2024-05-01' + i * interval '1 min'
         FROM generate_series(1, 800) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let mut c = rfs();
    c.args([
        "table",
        "run",
        "--source",
        &pg.url(),
        "--table",
        "orders",
        "--key",
        "id",
    ])
    .args(["--slots", "4", "--sink", &format!("{}/orders", os.url())])
    .args(["--store", &sqlite(work.path(), "s.db"), "--failure-log"])
    .arg(work.path().join("f.jsonl"));
    run_ok(c);
    let client = reqwest::blocking::Client::new();
    client
        .post(format!("{}/orders/_refresh", os.url()))
        .send()
        .unwrap();
    let hits: Value = client
        .post(format!("{}/orders/_search", os.url()))
        .json(&serde_json::json!({"size": 10000, "query": {"match_all": {}}}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let hits = hits["hits"]["hits"].as_array().unwrap();
    let expected = pg_rows(&pg, "orders", "id", &["at"]);
    assert_eq!(hits.len(), expected.len());
    for h in hits {
        let id = h["_id"].as_str().unwrap();
        let have = normalise_times(h["_source"].clone(), &["at"]);
        assert_eq!(&have, &expected[id], "row {id}");
    }
}
