//! `rfs table run` from a real PostgreSQL into DynamoDB (`dynalite`, started on loopback by
//! testkit), read back with the official AWS SDK for Rust and compared attribute by
//! attribute with what PostgreSQL holds (queried here with a client of our own): every
//! column type, numeric keys, a created table, a key mapped to other columns, an item over
//! 400 KB in the failure log; and `rfs table verify` agreeing, then finding a doctored table
//! (exit 6 listing the keys). No secret shows in anything rfs prints or writes.

mod dynamo;
mod table;

use std::process::Output;

use base64::Engine;
use dynamo::{assert_item, aws_env, b, json_av, n, s, Av, Sdk, SdkItem, SECRET};
use serde_json::Value;
use table::{micros, pg_and_dynalite, rfs, text, Pg};

const ROWS: i64 = 240;
/// The key of a row too large for an item.
const HUGE: i64 = 99_999;

fn run(args: &[&str]) -> Output {
    let mut c = rfs();
    aws_env(&mut c);
    c.args(args).output().expect("run rfs")
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

/// The items `every` should have become, built from PostgreSQL's own text of each value.
fn expected(pg: &Pg) -> Vec<(String, SdkItem)> {
    let rows = pg.query(
        "SELECT id, room::text, label, small, ratio::text, amount::text, ok, blob,
                (extract(epoch FROM at) * 1000000)::int8, day::text, doc::text, raw::text,
                tags::text, empty
         FROM every ORDER BY id",
        &[],
    );
    rows.iter()
        .map(|r| {
            let id: i64 = r.get(0);
            let opt_s = |v: Option<String>| v.map_or(Av::Null(true), Av::S);
            let opt_n = |v: Option<String>| v.map_or(Av::Null(true), Av::N);
            let mut item: SdkItem = [
                ("id", n(id.to_string())),
                ("room", s(r.get::<_, String>(1))),
                ("label", opt_s(r.get(2))),
                (
                    "small",
                    opt_n(r.get::<_, Option<i32>>(3).map(|v| v.to_string())),
                ),
                ("ratio", opt_n(r.get(4))),
                ("amount", opt_n(r.get(5))),
                ("ok", Av::Bool(r.get(6))),
                ("gone", Av::Null(true)),
                ("blob", b(&r.get::<_, Vec<u8>>(7))),
                ("day", s(r.get::<_, String>(9))),
                (
                    "doc",
                    json_av(&serde_json::from_str(r.get::<_, &str>(10)).unwrap()),
                ),
                (
                    "raw",
                    json_av(&serde_json::from_str(r.get::<_, &str>(11)).unwrap()),
                ),
                ("tags", s(r.get::<_, String>(12))),
                ("empty", s(r.get::<_, String>(13))),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            // Timestamps are RFC 3339 UTC strings: compared by instant below.
            item.insert("at".into(), Av::N(r.get::<_, i64>(8).to_string()));
            (id.to_string(), item)
        })
        .collect()
}

/// Every item of `table` against `want`, attribute by attribute; each key exactly once.
fn assert_table(sdk: &Sdk, table: &str, want: &[(String, SdkItem)]) {
    let items = sdk.scan(table);
    assert_eq!(items.len(), want.len(), "{table}: item count");
    let mut by_id = std::collections::BTreeMap::new();
    for mut item in items {
        let id = item["id"].as_n().unwrap().clone();
        // The time as microseconds since the epoch, so instants compare.
        let at = item["at"].as_s().unwrap().clone();
        item.insert("at".into(), Av::N(micros(&at).to_string()));
        assert!(
            by_id.insert(id.clone(), item).is_none(),
            "{table}: {id} twice"
        );
    }
    for (id, w) in want {
        let got = by_id
            .get(id)
            .unwrap_or_else(|| panic!("{table}: {id} missing"));
        assert_item(id, got, w);
    }
}

fn no_secret(what: &str, t: &str) {
    assert!(!t.contains(SECRET), "{what} shows the secret key:\n{t}");
}

#[test]
fn postgres_table_into_dynalite_reads_back_equal_and_verify_finds_a_doctored_table() {
    let test = "postgres_table_into_dynalite_reads_back_equal_and_verify_finds_a_doctored_table";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    pg.exec(&format!(
        "CREATE TABLE every (
            id bigint PRIMARY KEY, room uuid NOT NULL, label text, small int, ratio float8,
            amount numeric, ok bool NOT NULL, gone text, blob bytea NOT NULL,
            at timestamptz NOT NULL, day date NOT NULL, doc jsonb NOT NULL, raw json NOT NULL,
            tags int[] NOT NULL, empty text NOT NULL);
         INSERT INTO every
         SELECT i * 3, md5((i % 5)::text)::uuid, 'row ' || i || ' ✓', i - 100, (i / 4.0)::float8,
                CASE WHEN i % 10 = 0 THEN NULL
                     ELSE (i * 1000000000000000000.123456789 - 7.5)::numeric END,
                i % 3 = 0, NULL, int8send(i * 7919) || '\\x00ff'::bytea,
                timestamptz '2024-05-01 00:00:00+00' + i * interval '61.5 s', date '2024-01-01' + i,
                jsonb_build_object('i', i, 'nested',
                    jsonb_build_object('list', jsonb_build_array(1, 'two', NULL, true, 2.5)), 'no', NULL),
                json_build_array(i, 'x', json_build_object('deep', i % 2 = 0)),
                ARRAY[i, i + 1], ''
         FROM generate_series(1, {ROWS}) i;
         INSERT INTO every VALUES ({HUGE}, md5('x')::uuid, repeat('x', 410000), 1, 1, 1, true, NULL,
                '\\x00', now(), current_date, '{{}}', '[]', '{{}}', '');"
    ));
    let work = tempfile::tempdir().unwrap();
    let endpoint = dynalite.endpoint();
    let sink = format!("dynamodb://every?region=us-east-1&endpoint={endpoint}");
    let store = format!("sqlite://{}", work.path().join("s.db").display());
    let failures = work.path().join("failures.jsonl");
    let table_flags = |sink: &str, store: &str| -> Vec<String> {
        [
            "--source",
            &pg.url(),
            "--table",
            "every",
            "--key",
            "id",
            "--slots",
            "4",
            "--sink",
            sink,
            "--store",
            store,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let flags = table_flags(&sink, &store);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();

    // Without --create-table the missing table stops the run before anything is read.
    let out = run(&[
        &["table", "run"],
        &flags[..],
        &["--failure-log", "/dev/null"],
    ]
    .concat());
    assert_eq!(code(&out), Some(1), "{}", text(&out));
    assert!(text(&out).contains("--create-table"), "{}", text(&out));

    let out = run(&[
        &["table", "run"],
        &flags[..],
        &[
            "--create-table",
            "--parallel",
            "2",
            "--page-rows",
            "50",
            "--max-batch-docs",
            "30",
            "--failure-log",
            failures.to_str().unwrap(),
        ],
    ]
    .concat());
    // Exit 7: finished, one row refused (too large for an item).
    assert_eq!(code(&out), Some(7), "{}", text(&out));
    no_secret("rfs table run", &text(&out));
    let log = std::fs::read_to_string(&failures).unwrap();
    no_secret("the failure log", &log);
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert_eq!(lines[0]["id"], HUGE.to_string());
    assert_eq!(lines[0]["error_type"], "item_too_large", "{log}");

    let sdk = Sdk::new(&endpoint);
    assert_eq!(
        sdk.key_schema("every"),
        vec![("id".into(), "HASH".into(), "N".into())]
    );
    pg.exec(&format!("DELETE FROM every WHERE id = {HUGE}"));
    let want = expected(&pg);
    assert_eq!(want.len() as i64, ROWS);
    // A spot check of the conversion, written out by hand (the rest compares with
    // PostgreSQL's own text of each value).
    let (_, row1) = &want[0];
    assert_eq!(row1["id"], n("3"));
    assert_eq!(row1["amount"], n("999999999999999992.623456789"));
    assert_eq!(row1["label"], s("row 1 ✓"));
    assert_eq!(row1["tags"], s("{1,2}"));
    assert_eq!(
        base64::engine::general_purpose::STANDARD.encode(row1["blob"].as_b().unwrap().as_ref()),
        "AAAAAAAAHu8A/w=="
    );
    assert_table(&sdk, "every", &want);

    // Verify agrees (every row compared).
    let verify = |extra: &[&str]| run(&[&["table", "verify"], &flags[..], extra].concat());
    let out = verify(&["--all"]);
    assert_eq!(code(&out), Some(0), "{}", text(&out));
    assert!(text(&out).contains("verified"), "{}", text(&out));
    no_secret("rfs table verify", &text(&out));

    // Doctored: one attribute changed, one nested number changed, one item gone.
    let mut changed = want[0].1.clone();
    changed.insert("label".into(), s("tampered"));
    changed.insert("at".into(), s("2024-05-01T00:01:01.500Z"));
    sdk.put("every", changed);
    let mut nested = want[1].1.clone();
    let Av::M(mut doc) = nested["doc"].clone() else {
        panic!("doc is not a map")
    };
    doc.insert("i".into(), n("1000"));
    nested.insert("doc".into(), Av::M(doc));
    nested.insert("at".into(), s("2024-05-01T00:02:03Z"));
    sdk.put("every", nested);
    sdk.delete("every", [("id".to_string(), n("9"))].into());
    let out = verify(&["--all"]);
    assert_eq!(code(&out), Some(6), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("1 rows missing from the target") && t.contains("  9\n"),
        "{t}"
    );
    assert!(t.contains("2 rows different in the target"), "{t}");
    assert!(
        t.contains(r#"3: field label.S: source "row 1 ✓", target "tampered""#),
        "{t}"
    );
    assert!(t.contains("6: field doc"), "{t}");
    // Keys only (no row compared): the missing item is still found, through key-only reads.
    let out = verify(&["--sample", "0"]);
    assert_eq!(code(&out), Some(6), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("  9\n") && !t.contains("rows different"), "{t}");

    // A key of other columns, given as flags: partition key room (S), sort key id (N).
    let store2 = format!("sqlite://{}", work.path().join("s2.db").display());
    let sink2 = format!("dynamodb://every_by_room?region=us-east-1&endpoint={endpoint}");
    let flags2 = table_flags(&sink2, &store2);
    let flags2: Vec<&str> = flags2.iter().map(String::as_str).collect();
    let mapped = ["--partition-key", "room", "--sort-key", "id"];
    let out = run(&[
        &["table", "run"],
        &flags2[..],
        &mapped,
        &[
            "--create-table",
            "--failure-log",
            work.path().join("f2.jsonl").to_str().unwrap(),
        ],
    ]
    .concat());
    assert_eq!(code(&out), Some(0), "{}", text(&out));
    assert_eq!(
        sdk.key_schema("every_by_room"),
        vec![
            ("room".into(), "HASH".into(), "S".into()),
            ("id".into(), "RANGE".into(), "N".into())
        ]
    );
    assert_table(&sdk, "every_by_room", &want);
    let out = run(&[&["table", "verify"], &flags2[..], &mapped, &["--all"]].concat());
    assert_eq!(code(&out), Some(0), "{}", text(&out));
    // The mapping must fit the table: `every` is keyed by id alone (checked against a store
    // of no migration: the one of the run records the mapping, and refuses another, exit 2).
    let store3 = format!("sqlite://{}", work.path().join("s3.db").display());
    let flags3 = table_flags(&sink, &store3);
    let flags3: Vec<&str> = flags3.iter().map(String::as_str).collect();
    let out = run(&[
        &["table", "verify"],
        &flags[..],
        &["--partition-key", "room", "--all"],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("belongs to another migration"),
        "{}",
        text(&out)
    );
    let out = run(&[
        &["table", "verify"],
        &flags3[..],
        &["--partition-key", "room", "--all"],
    ]
    .concat());
    assert_eq!(code(&out), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("the table has partition key id (N)"),
        "{}",
        text(&out)
    );
    // DynamoDB flags with another sink are a usage mistake.
    let out = run(&[
        &["table", "run"],
        &table_flags(work.path().join("out").to_str().unwrap(), &store2)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()[..],
        &["--create-table"],
    ]
    .concat());
    assert_ne!(code(&out), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("--create-table applies to a dynamodb:// sink only"),
        "{}",
        text(&out)
    );
    // And TLS flags of http(s) sinks with a DynamoDB sink.
    let out = run(&[&["table", "run"], &flags[..], &["--sink-insecure"]].concat());
    assert_eq!(code(&out), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("--sink-insecure applies to http(s):// sinks only"),
        "{}",
        text(&out)
    );
}
