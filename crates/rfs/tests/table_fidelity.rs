//! Issue #42, fidelity of table rows: values and keys as PostgreSQL holds them, whatever
//! the renames, the server's settings or the column types, on a real PostgreSQL (testkit)
//! read back independently (files as JSON; DynamoDB through the AWS SDK):
//!
//! - `--columns` renames: each attribute typed by the column written under its name;
//! - a column renamed into the DynamoDB key attribute is the one checked for uniqueness,
//!   and a program cannot change a row's key or `_id` unseen;
//! - the reading session pins its settings (floats, dates, time zone, intervals, bytea)
//!   against `ALTER DATABASE … SET`;
//! - domains over domains (and arrays of them) read as their base type;
//! - a date key's `--until` inside a day keeps that day; a `--where` that gives each
//!   statement other rows fails its item at once.

mod dynamo;
mod table;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use dynamo::{assert_item, aws_env, b, json_av, n, s, Sdk, SdkItem};
use serde_json::{json, Value};
use table::{pg_and_dynalite, read_files, read_raw_sources, rfs, text, Pg};

fn run(args: &[&str]) -> Output {
    let mut c = rfs();
    aws_env(&mut c);
    c.args(args).output().expect("run rfs")
}

/// The flags of a run of `table` keyed by `key` into `sink`, with a store in `dir`.
fn flags(pg: &Pg, table: &str, key: &str, sink: &str, dir: &Path, store: &str) -> Vec<String> {
    [
        "--source",
        &pg.url(),
        "--table",
        table,
        "--key",
        key,
        "--sink",
        sink,
        "--store",
        &format!("sqlite://{}", dir.join(store).display()),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn with<'a>(base: &'a [String], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter()
        .map(String::as_str)
        .chain(extra.iter().copied())
        .collect()
}

fn failure_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `--columns id,body=raw,body_text=body`: column `body` (text) is written as `raw`, and
/// `body_text` (bytea) as `body`. Each attribute is typed by the column written under its
/// name: `raw` a string, `body` binary — not by the table's columns of those names
/// (which made the text "done" the bytes 76 89 de, and the bytea a base64 string).
#[test]
fn renamed_columns_keep_their_own_types_in_dynamodb() {
    let test = "renamed_columns_keep_their_own_types_in_dynamodb";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE notes (id bigint PRIMARY KEY, body text NOT NULL, raw bytea NOT NULL,
                             body_text bytea NOT NULL);
         INSERT INTO notes
         SELECT i, CASE WHEN i % 2 = 0 THEN 'done' ELSE 'note ' || i END, '\\x00ff'::bytea,
                '\\x7689de'::bytea || int4send(i)
         FROM generate_series(1, 20) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let endpoint = dynalite.endpoint();
    let sink = format!("dynamodb://notes?region=us-east-1&endpoint={endpoint}");
    let f = flags(&pg, "notes", "id", &sink, work.path(), "s.db");
    let cols = ["--columns", "id,body=raw,body_text=body", "--slots", "2"];
    let failures = work.path().join("failures.jsonl");
    let out = run(&[
        &["table", "run"],
        &with(&f, &cols)[..],
        &[
            "--create-table",
            "--failure-log",
            failures.to_str().unwrap(),
        ],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let want: BTreeMap<String, SdkItem> = pg
        .query("SELECT id, body, body_text FROM notes ORDER BY id", &[])
        .iter()
        .map(|r| {
            let id: i64 = r.get(0);
            let item: SdkItem = [
                ("id".to_string(), n(id.to_string())),
                ("raw".to_string(), s(r.get::<_, String>(1))),
                ("body".to_string(), b(&r.get::<_, Vec<u8>>(2))),
            ]
            .into_iter()
            .collect();
            (id.to_string(), item)
        })
        .collect();
    assert_eq!(want["2"]["raw"], s("done"));
    let sdk = Sdk::new(&endpoint);
    let items = sdk.scan("notes");
    assert_eq!(items.len(), want.len(), "{items:?}");
    for item in &items {
        let id = item["id"].as_n().unwrap().clone();
        assert_eq!(item.len(), 3, "{id}: {item:?}");
        assert_item(&id, item, &want[&id]);
    }
    let out = run(&[&["table", "verify"], &with(&f, &cols)[..], &["--all"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// `--columns id=event_id,tenant=id`: the key column is written as `event_id`, which is
/// the default partition key; `tenant` lands in attribute `id`. A partition key `id` is
/// checked on `tenant` (not unique: refused). A program that changes the key attribute or
/// the `_id` skips those rows as `key_changed` instead of letting them overwrite others.
#[test]
fn a_column_renamed_into_the_key_attribute_is_the_one_checked() {
    let test = "a_column_renamed_into_the_key_attribute_is_the_one_checked";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE events (id bigint PRIMARY KEY, tenant bigint NOT NULL, note text NOT NULL);
         INSERT INTO events SELECT i, i % 3, 'n' || i FROM generate_series(1, 30) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let endpoint = dynalite.endpoint();
    let sink = |t: &str| format!("dynamodb://{t}?region=us-east-1&endpoint={endpoint}");
    let cols = ["--columns", "id=event_id,tenant=id,note", "--slots", "2"];
    let sdk = Sdk::new(&endpoint);
    let want: BTreeMap<String, SdkItem> = pg
        .query("SELECT id, tenant, note FROM events ORDER BY id", &[])
        .iter()
        .map(|r| {
            let id: i64 = r.get(0);
            let item: SdkItem = [
                ("event_id".to_string(), n(id.to_string())),
                ("id".to_string(), n(r.get::<_, i64>(1).to_string())),
                ("note".to_string(), s(r.get::<_, String>(2))),
            ]
            .into_iter()
            .collect();
            (id.to_string(), item)
        })
        .collect();
    assert_eq!(want.len(), 30);

    // The default key: the key column under its written name, one item per row.
    let f = flags(
        &pg,
        "events",
        "id",
        &sink("ev_default"),
        work.path(),
        "a.db",
    );
    let failures = work.path().join("a.jsonl");
    let out = run(&[
        &["table", "run"],
        &with(&f, &cols)[..],
        &[
            "--create-table",
            "--failure-log",
            failures.to_str().unwrap(),
        ],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        sdk.key_schema("ev_default"),
        vec![("event_id".into(), "HASH".into(), "N".into())]
    );
    let items = sdk.scan("ev_default");
    assert_eq!(items.len(), 30, "{items:?}");
    for item in &items {
        let id = item["event_id"].as_n().unwrap().clone();
        assert_item(&id, item, &want[&id]);
    }
    let out = run(&[&["table", "verify"], &with(&f, &cols)[..], &["--all"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // Partition key `id`: the column written there is `tenant`, not unique. Refused before
    // a row is read, naming it.
    let f = flags(&pg, "events", "id", &sink("ev_tenant"), work.path(), "b.db");
    let out = run(&[
        &["table", "run"],
        &with(&f, &cols)[..],
        &[
            "--partition-key",
            "id",
            "--create-table",
            "--failure-log",
            "/dev/null",
        ],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("not unique") && t.contains("partition key id (column tenant)"),
        "{t}"
    );

    // A program that changes the key attribute: rows whose key it changes are skipped as
    // key_changed (logged, exit 7); the rest are written, none overwritten.
    let f = flags(&pg, "events", "id", &sink("ev_prog"), work.path(), "c.db");
    let failures = work.path().join("c.jsonl");
    let program = "._source.event_id |= (. % 5)";
    let out = run(&[
        &["table", "run"],
        &with(&f, &cols)[..],
        &[
            "--create-table",
            "--transform",
            program,
            "--failure-log",
            failures.to_str().unwrap(),
        ],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    let lines = failure_lines(&failures);
    let mut skipped: Vec<i64> = lines
        .iter()
        .map(|l| {
            assert_eq!(l["error_type"], "key_changed", "{l}");
            l["id"].as_str().unwrap().parse().unwrap()
        })
        .collect();
    skipped.sort();
    assert_eq!(skipped, (5..=30).collect::<Vec<_>>());
    let items = sdk.scan("ev_prog");
    assert_eq!(items.len(), 4, "{items:?}");
    for item in &items {
        let id = item["event_id"].as_n().unwrap().clone();
        assert_item(&id, item, &want[&id]);
    }
    let out = run(&[
        &["table", "verify"],
        &with(&f, &cols)[..],
        &["--all", "--transform", program],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // A program that gives every row one `_id`, into files: every row skipped, none written.
    let dir = work.path().join("out");
    let f = flags(
        &pg,
        "events",
        "id",
        dir.to_str().unwrap(),
        work.path(),
        "d.db",
    );
    let failures = work.path().join("d.jsonl");
    let out = run(&[
        &["table", "run"],
        &with(&f, &["--slots", "2"])[..],
        &[
            "--transform",
            "._id = \"same\"",
            "--failure-log",
            failures.to_str().unwrap(),
        ],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    let lines = failure_lines(&failures);
    assert_eq!(lines.len(), 30, "{lines:?}");
    assert!(lines.iter().all(|l| l["error_type"] == "key_changed"));
    let (rows, written) = if dir.exists() {
        read_files(&dir, "public.events")
    } else {
        (BTreeMap::new(), 0)
    };
    assert_eq!((rows.len(), written), (0, 0), "{rows:?}");
}

/// Set `settings` (name, value) on the test's database for every new session.
fn alter_database(pg: &Pg, settings: &[(&str, &str)]) {
    for (name, value) in settings {
        pg.exec(&format!(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET {name} = %L', current_database(), '{value}'); END $$;"
        ));
    }
}

/// With the database's defaults changed (`ALTER DATABASE … SET`), values read as text are
/// as PostgreSQL prints them under rfs's pinned settings: floats exact, ISO times in UTC,
/// intervals `postgres`, bytea hex. And verify, reading with the same session, agrees.
#[test]
fn values_do_not_follow_the_database_session_defaults() {
    let test = "values_do_not_follow_the_database_session_defaults";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE shown (id int PRIMARY KEY, f float8 NOT NULL, floats float8[] NOT NULL,
                             at timestamptz NOT NULL, ats timestamptz[] NOT NULL,
                             span interval NOT NULL, during tstzrange NOT NULL,
                             blobs bytea[] NOT NULL, pt point NOT NULL);
         INSERT INTO shown VALUES (1, 0.1::float8 + 0.2::float8, ARRAY[0.1::float8 + 0.2::float8],
                '2024-05-01 01:30:00+00', ARRAY['2024-05-01 01:30:00+00'::timestamptz],
                interval '1 day 2 hours 3 minutes',
                tstzrange('2024-05-01 01:30:00+00', '2024-05-02 00:00:00+00'),
                ARRAY['\\x00ff'::bytea], point(0.1::float8 + 0.2::float8, 1));",
    );
    alter_database(
        &pg,
        &[
            ("extra_float_digits", "0"),
            ("DateStyle", "SQL, DMY"),
            ("TimeZone", "America/New_York"),
            ("IntervalStyle", "sql_standard"),
            ("bytea_output", "escape"),
        ],
    );
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("out");
    let f = flags(
        &pg,
        "shown",
        "id",
        dir.to_str().unwrap(),
        work.path(),
        "s.db",
    );
    let out = run(&[&["table", "run"], &with(&f, &[])[..]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let raw = read_raw_sources(&dir, "public.shown");
    let row = &raw["1"];
    let want = [
        ("id", "1"),
        ("f", "0.30000000000000004"),
        ("floats", r#""{0.30000000000000004}""#),
        ("at", r#""2024-05-01T01:30:00Z""#),
        ("ats", r#""{\"2024-05-01 01:30:00+00\"}""#),
        ("span", r#""1 day 02:03:00""#),
        (
            "during",
            r#""[\"2024-05-01 01:30:00+00\",\"2024-05-02 00:00:00+00\")""#,
        ),
        ("blobs", r#""{\"\\\\x00ff\"}""#),
        ("pt", r#""(0.30000000000000004,1)""#),
    ];
    assert_eq!(row.len(), want.len(), "{row:?}");
    for (col, v) in want {
        assert_eq!(row[col], v, "column {col}: {row:?}");
    }
    let out = run(&[&["table", "verify"], &with(&f, &["--all"])[..]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// Domains over domains (three deep), an array of such a domain and a key of one: read as
/// their base types — an int a number, jsonb embedded JSON, timestamptz RFC 3339 UTC,
/// in files and in DynamoDB (numbers `N`).
#[test]
fn domains_over_domains_read_as_their_base_type() {
    let test = "domains_over_domains_read_as_their_base_type";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    pg.exec(
        "CREATE DOMAIN d_int AS int; CREATE DOMAIN d_int2 AS d_int CHECK (VALUE > 0);
         CREATE DOMAIN d_doc AS jsonb; CREATE DOMAIN d_doc2 AS d_doc;
         CREATE DOMAIN d_at AS timestamptz; CREATE DOMAIN d_at2 AS d_at; CREATE DOMAIN d_at3 AS d_at2;
         CREATE DOMAIN d_key AS bigint; CREATE DOMAIN d_key2 AS d_key;
         CREATE DOMAIN d_ints AS d_int2[];
         CREATE TABLE chained (id d_key2 PRIMARY KEY, n d_int2 NOT NULL, doc d_doc2 NOT NULL,
                               at d_at3 NOT NULL, ns d_int2[] NOT NULL, more d_ints NOT NULL);
         INSERT INTO chained
         SELECT i, i + 7, jsonb_build_object('a', jsonb_build_array(i, 'x')),
                timestamptz '2024-05-01 01:30:00+00' + i * interval '1 hour',
                ARRAY[i + 7, i + 8]::d_int2[], ARRAY[i]::d_ints
         FROM generate_series(1, 5) i;",
    );
    alter_database(&pg, &[("TimeZone", "America/New_York")]);
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("out");
    let f = flags(
        &pg,
        "chained",
        "id",
        dir.to_str().unwrap(),
        work.path(),
        "a.db",
    );
    let out = run(&[&["table", "run"], &with(&f, &[])[..]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (rows, _) = read_files(&dir, "public.chained");
    assert_eq!(rows.len(), 5);
    for i in 1..=5i64 {
        let want = json!({
            "id": i,
            "n": i + 7,
            "doc": {"a": [i, "x"]},
            "at": format!("2024-05-01T{:02}:30:00Z", 1 + i),
            "ns": format!("{{{},{}}}", i + 7, i + 8),
            "more": format!("{{{i}}}"),
        });
        assert_eq!(rows[&i.to_string()], want, "row {i}");
    }

    let endpoint = dynalite.endpoint();
    let sink = format!("dynamodb://chained?region=us-east-1&endpoint={endpoint}");
    let f = flags(&pg, "chained", "id", &sink, work.path(), "b.db");
    let out = run(&[
        &["table", "run"],
        &with(&f, &["--create-table", "--failure-log", "/dev/null"])[..],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let sdk = Sdk::new(&endpoint);
    assert_eq!(
        sdk.key_schema("chained"),
        vec![("id".into(), "HASH".into(), "N".into())]
    );
    let items = sdk.scan("chained");
    assert_eq!(items.len(), 5);
    for item in &items {
        let id: i64 = item["id"].as_n().unwrap().parse().unwrap();
        let want: SdkItem = [
            ("id", n(id.to_string())),
            ("n", n((id + 7).to_string())),
            ("doc", json_av(&json!({"a": [id, "x"]}))),
            ("at", s(format!("2024-05-01T{:02}:30:00Z", 1 + id))),
            ("ns", s(format!("{{{},{}}}", id + 7, id + 8))),
            ("more", s(format!("{{{id}}}"))),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_item(&id.to_string(), item, &want);
    }
    let out = run(&[&["table", "verify"], &with(&f, &["--all"])[..]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A date key holds whole days: `--until` inside a day keeps that day's rows (some of
/// that day is before it), `--from` inside a day keeps its day too.
#[test]
fn a_date_key_keeps_the_day_of_a_limit_inside_it() {
    let test = "a_date_key_keeps_the_day_of_a_limit_inside_it";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE days (day date PRIMARY KEY, n int NOT NULL);
         INSERT INTO days SELECT date '2024-04-27' + i, i FROM generate_series(0, 7) i;",
    );
    let work = tempfile::tempdir().unwrap();
    for (rule, dir) in [("--slot-by", "time"), ("--slots", "count")] {
        let out_dir = work.path().join(dir);
        let f = flags(
            &pg,
            "days",
            "day",
            out_dir.to_str().unwrap(),
            work.path(),
            &format!("{dir}.db"),
        );
        let limits = [
            rule,
            if rule == "--slot-by" { "time:1d" } else { "3" },
            "--from",
            "2024-04-28T06:00:00Z",
            "--until",
            "2024-05-01T12:00:00Z",
        ];
        let out = run(&[&["table", "run"], &with(&f, &limits)[..]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let (rows, _) = read_files(&out_dir, "public.days");
        let days: Vec<&str> = rows.keys().map(String::as_str).collect();
        assert_eq!(
            days,
            ["2024-04-28", "2024-04-29", "2024-04-30", "2024-05-01"],
            "{rule}"
        );
        for (day, row) in &rows {
            assert_eq!(row["day"], json!(day));
        }
        let out = run(&[&["table", "verify"], &with(&f, &limits)[..], &["--all"]].concat());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
}

/// A `--where` that gives the count and the pages other rows (here deterministically: it
/// looks at the statement's own text; `random()` does so by chance) fails its item at the
/// first mismatch for good: an attempt whose counts happen to agree would prove nothing.
#[test]
fn a_where_that_is_not_deterministic_fails_its_item_without_retry() {
    let test = "a_where_that_is_not_deterministic_fails_its_item_without_retry";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE vol (id int PRIMARY KEY);
         INSERT INTO vol SELECT i FROM generate_series(1, 50) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("out");
    let f = flags(&pg, "vol", "id", dir.to_str().unwrap(), work.path(), "s.db");
    let out = run(&[
        &["table", "run"],
        &with(
            &f,
            &[
                "--slots",
                "1",
                "--max-attempts",
                "4",
                "--where",
                "current_query() NOT LIKE 'SELECT count' || '%'",
                "--failure-log",
                "/dev/null",
            ],
        )[..],
    ]
    .concat());
    let t = text(&out);
    assert_ne!(out.status.code(), Some(0), "{t}");
    assert!(t.contains("FAILED without retry"), "{t}");
    assert!(t.contains("--where predicate gives other rows"), "{t}");
    // One attempt: no "item failed" (the message of an attempt to be retried).
    assert!(!t.contains("item failed:"), "{t}");
    assert_eq!(t.matches("FAILED without retry").count(), 1, "{t}");
}
