//! `rfs table run` with `--columns`, `--where` and a `--transform` program, from a real
//! PostgreSQL into DynamoDB (`dynalite`), read back with the official AWS SDK and compared
//! item by item with what PostgreSQL holds (queried with a client of our own):
//! - only the rows matching `--where` are read (counted: rows delivered = rows matched);
//! - only the listed columns are written, `body=text` under its new name, the key column
//!   read for the cursor but absent when not listed;
//! - a derived attribute from the jq program; `table verify` with the same flags agrees
//!   (no program), and a bad `--where` or column is an error naming it.

mod dynamo;
mod table;

use std::process::Output;

use dynamo::{assert_item, aws_env, n, s, Item, Sdk};
use table::{rfs, Pg};

fn run(args: &[&str]) -> Output {
    let mut c = rfs();
    aws_env(&mut c);
    c.args(args).output().expect("run rfs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn columns_where_and_a_program_shape_rows_into_dynalite() {
    let test = "columns_where_and_a_program_shape_rows_into_dynalite";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    let Some(dynalite) = testkit::services::Dynalite::start(test) else {
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
    let want: Vec<(String, Item)> = want_rows
        .iter()
        .map(|r| {
            let id: i64 = r.get(0);
            let item: Item = [
                ("id".to_string(), n(id.to_string())),
                ("title".to_string(), s(r.get::<_, String>(1))),
                ("text".to_string(), s(r.get::<_, String>(2))),
            ]
            .into_iter()
            .collect();
            (id.to_string(), item)
        })
        .collect();
    let check = |table: &str, want: &[(String, Item)]| {
        let items = sdk.scan(table);
        assert_eq!(items.len(), want.len(), "{table}: item count");
        let by_id: std::collections::BTreeMap<String, Item> = items
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
    let out = run(&[
        &["table", "run"],
        &f[..],
        &[
            "--create-table",
            "--transform",
            "._source.title_len = (._source.title | length) | ._source.title |= ascii_upcase",
        ],
    ]
    .concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shaped: Vec<(String, Item)> = want
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
