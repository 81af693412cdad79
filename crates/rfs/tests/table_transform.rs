//! `rfs table run` with `--columns`, `--where` and a `--transform` program, from a real
//! PostgreSQL into DynamoDB (`dynalite`), read back with the official AWS SDK and compared
//! item by item with what PostgreSQL holds (queried with a client of our own):
//! - only the rows matching `--where` are read (counted: rows delivered = rows matched);
//! - only the listed columns are written, `body=text` under its new name, the key column
//!   read for the cursor but absent when not listed;
//! - a derived attribute from the jq program; `table verify` with the same flags (and
//!   program) agrees, and a bad `--where` or column is an error naming it;
//! - `table verify` applies the program (into dynalite and into a `_bulk` target): exact,
//!   and a row changed on the target afterwards is a mismatch (exit 6);
//! - a program that drops or retypes the DynamoDB key: that row refused, exit 7.

mod dynamo;
mod table;

use std::process::Output;

use dynamo::{assert_item, aws_env, n, s, Sdk, SdkItem};
use serde_json::json;
use table::{pg_and_dynalite, rfs, text, Pg};
use testkit::server::{ServerConfig, TestServer};

fn run(args: &[&str]) -> Output {
    let mut c = rfs();
    aws_env(&mut c);
    c.args(args).output().expect("run rfs")
}

#[test]
fn columns_where_and_a_program_shape_rows_into_dynalite() {
    let test = "columns_where_and_a_program_shape_rows_into_dynalite";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE posts (id bigint PRIMARY KEY, title text NOT NULL, body text,
                             secret text, status text NOT NULL);
         INSERT INTO posts
         SELECT i, 'Title ' || i, 'body of ' || i, 'pw' || i,
                CASE WHEN i % 3 = 0 THEN 'draft' ELSE 'live' END
         FROM generate_series(1, 150) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let endpoint = dynalite.endpoint();
    let store = |name: &str| format!("sqlite://{}", work.path().join(name).display());
    let flags = |table: &str, store: &str| -> Vec<String> {
        [
            "--source",
            &pg.url(),
            "--table",
            "posts",
            "--key",
            "id",
            "--slots",
            "3",
            "--sink",
            &format!("dynamodb://{table}?region=us-east-1&endpoint={endpoint}"),
            "--store",
            store,
            "--where",
            "status = 'live' AND id > 10",
            "--columns",
            "id,title,body=text",
            "--failure-log",
            work.path().join("failures.jsonl").to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let want_rows = pg.query(
        "SELECT id, title, body FROM posts WHERE status = 'live' AND id > 10 ORDER BY id",
        &[],
    );
    assert_eq!(want_rows.len(), 93);

    // Projection and predicate alone; verify with the same flags agrees.
    let f = flags("plain", &store("a.db"));
    let f: Vec<&str> = f.iter().map(String::as_str).collect();
    let out = run(&[&["table", "run"], &f[..], &["--create-table"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let sdk = Sdk::new(&endpoint);
    let want: Vec<(String, SdkItem)> = want_rows
        .iter()
        .map(|r| {
            let id: i64 = r.get(0);
            let item: SdkItem = [
                ("id".to_string(), n(id.to_string())),
                ("title".to_string(), s(r.get::<_, String>(1))),
                ("text".to_string(), s(r.get::<_, String>(2))),
            ]
            .into_iter()
            .collect();
            (id.to_string(), item)
        })
        .collect();
    let check = |table: &str, want: &[(String, SdkItem)]| {
        let items = sdk.scan(table);
        assert_eq!(items.len(), want.len(), "{table}: item count");
        let by_id: std::collections::BTreeMap<String, SdkItem> = items
            .into_iter()
            .map(|i| (i["id"].as_n().unwrap().clone(), i))
            .collect();
        for (id, w) in want {
            let got = by_id
                .get(id)
                .unwrap_or_else(|| panic!("{table}: {id} missing"));
            assert_eq!(got.len(), w.len(), "{table} {id}: attributes {got:?}");
            assert_item(id, got, w);
        }
    };
    check("plain", &want);
    let out = run(&[&["table", "verify"], &f[..], &["--all"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // The predicate is part of the migration and shown by status.
    let out = run(&["status", "--json", "--store", &store("a.db")]);
    let st: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        st["migration"]["where"], "status = 'live' AND id > 10",
        "{st}"
    );
    assert_eq!(st["docs_done"], 93, "rows read = rows matched: {st}");

    // With a program: a derived attribute and a changed one (columns in another order).
    let f = flags("shaped", &store("b.db"));
    let mut f: Vec<&str> = f.iter().map(String::as_str).collect();
    let cols = f.iter().position(|a| *a == "id,title,body=text").unwrap();
    f[cols] = "title,body=text,id";
    let program = "._source.title_len = (._source.title | length) | ._source.title |= ascii_upcase";
    let out = run(&[
        &["table", "run"],
        &f[..],
        &["--create-table", "--transform", program],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shaped: Vec<(String, SdkItem)> = want
        .iter()
        .map(|(id, item)| {
            let mut item = item.clone();
            let title = item["title"].as_s().unwrap().clone();
            item.insert("title_len".into(), n(title.chars().count().to_string()));
            item.insert("title".into(), s(title.to_uppercase()));
            (id.clone(), item)
        })
        .collect();
    check("shaped", &shaped);
    // verify with the same flags and program: exact.
    let out = run(&[
        &["table", "verify"],
        &f[..],
        &["--all", "--transform", program],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // Mistakes are errors naming what is wrong, before anything is written.
    let f = flags("bad", &store("c.db"));
    let mut f: Vec<&str> = f.iter().map(String::as_str).collect();
    let w = f
        .iter()
        .position(|a| *a == "status = 'live' AND id > 10")
        .unwrap();
    f[w] = "no_such_column = 1";
    let out = run(&[&["table", "run"], &f[..], &["--create-table"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("--where"), "{}", text(&out));
    f[w] = "true; DROP TABLE posts";
    let out = run(&[&["table", "run"], &f[..], &["--create-table"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    f[w] = "true";
    let c = f.iter().position(|a| *a == "id,title,body=text").unwrap();
    f[c] = "id,nope";
    let out = run(&[&["table", "run"], &f[..], &["--create-table"]].concat());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("no column \"nope\""), "{}", text(&out));
    assert_eq!(pg.query("SELECT count(*) FROM posts", &[]).len(), 1);
}

/// The program of the verify tests: drafts filtered out, `title` upper-cased, `title_len`
/// derived, `status` dropped.
const SHAPE: &str = r#"select(._source.status != "draft")
  | ._source.title_len = (._source.title | length) | ._source.title |= ascii_upcase
  | del(._source.status)"#;

/// What [`SHAPE`] makes of the rows of `posts`: id → (title, title_len); and how many
/// rows it filters.
fn shaped_rows(pg: &Pg) -> (Vec<(i64, String, usize)>, usize) {
    let rows = pg.query("SELECT id, title, status FROM posts ORDER BY id", &[]);
    let mut out = Vec::new();
    let mut filtered = 0;
    for r in rows {
        if r.get::<_, String>(2) == "draft" {
            filtered += 1;
            continue;
        }
        let title: String = r.get(1);
        out.push((r.get(0), title.to_uppercase(), title.chars().count()));
    }
    (out, filtered)
}

fn posts(pg: &Pg) {
    pg.exec(
        "CREATE TABLE posts (id bigint PRIMARY KEY, title text NOT NULL, status text NOT NULL);
         INSERT INTO posts
         SELECT i, 'Title ' || i, CASE WHEN i % 4 = 0 THEN 'draft' ELSE 'live' END
         FROM generate_series(1, 120) i;",
    );
}

/// `table verify` applies the run's program: a transformed migration into dynalite
/// verifies exactly (filtered rows expected absent); without the program, or after an
/// item is changed on the target (with the AWS SDK), it does not.
#[test]
fn table_verify_applies_the_program_into_dynalite() {
    let test = "table_verify_applies_the_program_into_dynalite";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    posts(&pg);
    let work = tempfile::tempdir().unwrap();
    let endpoint = dynalite.endpoint();
    let store = format!("sqlite://{}", work.path().join("s.db").display());
    let sink = format!("dynamodb://shaped?region=us-east-1&endpoint={endpoint}");
    let failures = work.path().join("failures.jsonl");
    let pg_url = pg.url();
    let flags: Vec<&str> = vec![
        "--source",
        &pg_url,
        "--table",
        "posts",
        "--key",
        "id",
        "--slots",
        "3",
        "--sink",
        &sink,
        "--store",
        &store,
        "--failure-log",
        failures.to_str().unwrap(),
    ];
    let out = run(&[
        &["table", "run"],
        &flags[..],
        &["--create-table", "--transform", SHAPE],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (want, filtered) = shaped_rows(&pg);
    assert_eq!(filtered, 30);
    let sdk = Sdk::new(&endpoint);
    let items = sdk.scan("shaped");
    assert_eq!(items.len(), want.len(), "item count");
    let by_id: std::collections::BTreeMap<String, SdkItem> = items
        .into_iter()
        .map(|i| (i["id"].as_n().unwrap().clone(), i))
        .collect();
    for (id, title, len) in &want {
        let w: SdkItem = [
            ("id".to_string(), n(id.to_string())),
            ("title".to_string(), s(title.clone())),
            ("title_len".to_string(), n(len.to_string())),
        ]
        .into_iter()
        .collect();
        let got = &by_id[&id.to_string()];
        assert_eq!(got.len(), w.len(), "{id}: {got:?}");
        assert_item(&id.to_string(), got, &w);
    }

    let verify =
        |extra: &[&str]| run(&[&["table", "verify"], &flags[..], &["--all"], extra].concat());
    let out = verify(&["--transform", SHAPE]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{filtered} rows filtered out")),
        "{}",
        text(&out)
    );
    // With another program (or none) the store's migration is not the one verified.
    let out = verify(&["--transform", "."]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("another migration"), "{}", text(&out));
    // Without the program (and no store to check) the rows do not match: every live row
    // differs, the drafts are missing.
    let no_store = format!("sqlite://{}", work.path().join("none.db").display());
    let unstored: Vec<&str> = flags
        .iter()
        .map(|f| if *f == store { no_store.as_str() } else { f })
        .collect();
    let out = run(&[&["table", "verify"], &unstored[..], &["--all"]].concat());
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{filtered} rows missing from the target")),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains(&format!("{} rows different", want.len())),
        "{}",
        text(&out)
    );
    // One item changed on the target: a difference naming the row.
    let (id, title, len) = &want[7];
    sdk.put(
        "shaped",
        [
            ("id".to_string(), n(id.to_string())),
            ("title".to_string(), s(format!("{title} changed"))),
            ("title_len".to_string(), n(len.to_string())),
        ]
        .into_iter()
        .collect(),
    );
    let out = verify(&["--transform", SHAPE]);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert!(text(&out).contains("1 rows different"), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{id}: field title")),
        "{}",
        text(&out)
    );
}

/// The same into a `_bulk` target (the testkit server): exact with the program; a
/// document changed on the target afterwards, or one a filtered row left there, fails it.
#[test]
fn table_verify_applies_the_program_into_a_bulk_target() {
    let test = "table_verify_applies_the_program_into_a_bulk_target";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    posts(&pg);
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let work = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", work.path().join("s.db").display());
    let sink = format!("{}/shaped", server.url());
    let failures = work.path().join("failures.jsonl");
    let pg_url = pg.url();
    let flags: Vec<&str> = vec![
        "--source",
        &pg_url,
        "--table",
        "posts",
        "--key",
        "id",
        "--slots",
        "3",
        "--sink",
        &sink,
        "--store",
        &store,
        "--failure-log",
        failures.to_str().unwrap(),
    ];
    let out = run(&[&["table", "run"], &flags[..], &["--transform", SHAPE]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (want, filtered) = shaped_rows(&pg);
    let got = server.documents("shaped");
    assert_eq!(got.len(), want.len());
    for (id, title, len) in &want {
        assert_eq!(
            got[&id.to_string()],
            json!({"id": id, "title": title, "title_len": len}),
            "{id}"
        );
    }
    let verify = || {
        run(&[
            &["table", "verify"],
            &flags[..],
            &["--all", "--transform", SHAPE],
        ]
        .concat())
    };
    let out = verify();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{filtered} rows filtered out")),
        "{}",
        text(&out)
    );
    let port = server.addr().port();
    let put = |id: &str, doc: serde_json::Value| {
        let (code, body) = testkit::services::raw_http(
            port,
            "PUT",
            &format!("/shaped/_doc/{id}"),
            &[("Content-Type", "application/json")],
            doc.to_string().as_bytes(),
        )
        .unwrap();
        assert!(
            matches!(code, 200 | 201),
            "{}",
            String::from_utf8_lossy(&body)
        );
    };
    let (id, title, len) = &want[3];
    put(
        &id.to_string(),
        json!({"id": id, "title": title, "title_len": len + 1}),
    );
    let out = verify();
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{id}: field title_len")),
        "{}",
        text(&out)
    );
    // Put it back: exact again; then a filtered row's document appears: extra.
    put(
        &id.to_string(),
        json!({"id": id, "title": title, "title_len": len}),
    );
    assert_eq!(verify().status.code(), Some(0));
    put("4", json!({"id": 4, "title": "TITLE 4", "title_len": 7}));
    let out = verify();
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert!(
        text(&out).contains("1 rows in the target that the source does not hold"),
        "{}",
        text(&out)
    );
}

/// A program whose output lacks the DynamoDB partition key, or has it with the wrong
/// type, is refused for that row alone (counted, in the failure log with its reason,
/// exit 7); every other row is delivered (read back with the AWS SDK), and `table verify`
/// names exactly the refused rows as missing.
#[test]
fn a_program_that_breaks_the_dynamodb_key_is_refused_per_row() {
    let test = "a_program_that_breaks_the_dynamodb_key_is_refused_per_row";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    posts(&pg);
    let work = tempfile::tempdir().unwrap();
    let endpoint = dynalite.endpoint();
    let store = format!("sqlite://{}", work.path().join("s.db").display());
    let sink = format!("dynamodb://keys?region=us-east-1&endpoint={endpoint}");
    let failures = work.path().join("failures.jsonl");
    let program = r#"if ._source.id % 10 == 0 then del(._source.id)
        elif ._source.id % 10 == 5 then ._source.id |= "k\(.)" else . end"#;
    let pg_url = pg.url();
    let flags: Vec<&str> = vec![
        "--source",
        &pg_url,
        "--table",
        "posts",
        "--key",
        "id",
        "--slots",
        "3",
        "--sink",
        &sink,
        "--store",
        &store,
        "--failure-log",
        failures.to_str().unwrap(),
        "--transform",
        program,
    ];
    let out = run(&[&["table", "run"], &flags[..], &["--create-table"]].concat());
    assert_eq!(out.status.code(), Some(7), "{}", text(&out));
    let log = std::fs::read_to_string(&failures).unwrap();
    let records: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let bad: std::collections::BTreeSet<i64> =
        (1..=120).filter(|i| i % 10 == 0 || i % 10 == 5).collect();
    assert_eq!(records.len(), bad.len(), "{log}");
    for r in &records {
        let id: i64 = r["id"].as_str().unwrap().parse().unwrap();
        assert!(bad.contains(&id), "{r}");
        let reason = r["reason"].as_str().unwrap();
        assert!(reason.contains("key attribute \"id\""), "{r}");
        let kind = if id % 10 == 0 {
            "missing_key"
        } else {
            "key_type_mismatch"
        };
        assert_eq!(r["error_type"], kind, "{r}");
        assert!(
            !reason.contains("ValidationException"),
            "refused before sending: {r}"
        );
    }
    let items = Sdk::new(&endpoint).scan("keys");
    let got: std::collections::BTreeSet<i64> = items
        .iter()
        .map(|i| i["id"].as_n().unwrap().parse().unwrap())
        .collect();
    let want: std::collections::BTreeSet<i64> = (1..=120).filter(|i| !bad.contains(i)).collect();
    assert_eq!(got, want);
    let out = run(&["status", "--json", "--store", &store]);
    let st: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(st["docs_refused"], bad.len() as u64, "{st}");
    // verify with the program: exactly the refused rows are missing.
    let out = run(&[&["table", "verify"], &flags[..], &["--all"]].concat());
    assert_eq!(out.status.code(), Some(6), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("{} rows missing from the target", bad.len())),
        "{}",
        text(&out)
    );
}

/// A program that routes some rows to another index (odd ids to `public.posts-odd`: the program
/// sees the table's name, and what it renames is not renamed again): `table verify` looks each
/// document up where the program sent it — exact on a cluster and in files; a routed
/// document deleted on the target is missing, named with its index (exit 6).
#[test]
fn table_verify_follows_rows_a_program_routes_to_another_index() {
    let test = "table_verify_follows_rows_a_program_routes_to_another_index";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    posts(&pg);
    const ROUTE: &str = r#"if ._source.id % 2 == 1 then ._index += "-odd" else . end"#;
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let work = tempfile::tempdir().unwrap();
    let pg_url = pg.url();
    let out_dir = work.path().join("out");
    let sinks = [
        format!("{}/routed", server.url()),
        format!("file://{}", out_dir.display()),
    ];
    for (n, sink) in sinks.iter().enumerate() {
        let store = format!(
            "sqlite://{}",
            work.path().join(format!("s{n}.db")).display()
        );
        let failures = work.path().join(format!("failures{n}.jsonl"));
        let flags: Vec<&str> = vec![
            "--source",
            &pg_url,
            "--table",
            "posts",
            "--key",
            "id",
            "--slots",
            "2",
            "--sink",
            sink,
            "--store",
            &store,
            "--failure-log",
            failures.to_str().unwrap(),
        ];
        let out = run(&[&["table", "run"], &flags[..], &["--transform", ROUTE]].concat());
        assert_eq!(out.status.code(), Some(0), "{sink}: {}", text(&out));
        let verify = || {
            run(&[
                &["table", "verify"],
                &flags[..],
                &["--all", "--transform", ROUTE],
            ]
            .concat())
        };
        let out = verify();
        assert_eq!(out.status.code(), Some(0), "{sink}: {}", text(&out));
        if n == 0 {
            let odd = server.documents("public.posts-odd");
            let even = server.documents("routed");
            assert_eq!((odd.len(), even.len()), (60, 60));
            assert_eq!(odd["7"]["title"], "Title 7");
            let (code, body) = testkit::services::raw_http(
                server.addr().port(),
                "DELETE",
                "/public.posts-odd/_doc/7?refresh=true",
                &[],
                b"",
            )
            .unwrap();
            assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
            let out = verify();
            assert_eq!(out.status.code(), Some(6), "{}", text(&out));
            assert!(
                text(&out).contains("7 (in public.posts-odd)"),
                "{}",
                text(&out)
            );
        }
    }
}
