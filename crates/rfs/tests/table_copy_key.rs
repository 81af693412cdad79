//! `rfs copy --from postgres://…` into DynamoDB checks the key mapping as `rfs table run`
//! does (the same function, issue #42): a `partition-key` that is not unique in the table
//! is refused before anything is created or read; `--allow-key-collisions` writes anyway
//! with every row overwritten inside a batch refused as `key_collision`; a unique mapping
//! copies every row. Real PostgreSQL and dynalite, items read back with the AWS SDK.
//! Before: the copy exited 7 or 0 with 30 rows collapsed into 3 items, no refusal.

mod dynamo;
mod table;

use std::process::Output;

use dynamo::{aws_env, Av, Sdk};
use table::{pg_and_dynalite, rfs, sqlite, text};

fn run(args: &[&str]) -> Output {
    let mut c = rfs();
    aws_env(&mut c);
    c.args(args).output().expect("run rfs")
}

#[test]
fn copy_from_a_table_into_dynamodb_checks_the_key_mapping_is_unique() {
    let test = "copy_from_a_table_into_dynamodb_checks_the_key_mapping_is_unique";
    let Some((pg, dynalite)) = pg_and_dynalite(test) else {
        return;
    };
    pg.exec(
        "CREATE TABLE ev (event_id bigint PRIMARY KEY, tenant int NOT NULL, body text NOT NULL);
         INSERT INTO ev SELECT i, i % 3, 'body ' || i FROM generate_series(0, 29) i;",
    );
    let work = tempfile::tempdir().unwrap();
    let endpoint = dynalite.endpoint();
    let from = format!("{}?table=ev&key=event_id&slots=1", pg.url());
    let copy = |table: &str, key: &str, store: &str, extra: &[&str]| {
        let to =
            format!("dynamodb://{table}?region=us-east-1&endpoint={endpoint}&partition-key={key}");
        let store = sqlite(work.path(), store);
        let failures = work
            .path()
            .join(format!("{store}.jsonl").replace(['/', ':'], "_"));
        let mut a: Vec<&str> = vec![
            "copy",
            "--from",
            &from,
            "--to",
            &to,
            "--create-table",
            "--store",
            &store,
            "--failure-log",
            failures.to_str().unwrap(),
            "--no-progress",
        ];
        a.extend_from_slice(extra);
        run(&a)
    };
    let sdk = Sdk::new(&endpoint);
    let tables = || {
        sdk.rt
            .block_on(sdk.client.list_tables().send())
            .unwrap()
            .table_names
            .unwrap_or_default()
    };

    // tenant is not unique: refused before the table is created or a row read
    let out = copy("by_tenant", "tenant", "s1.db", &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("not unique") && t.contains("tenant") && t.contains("--allow-key-collisions"),
        "{t}"
    );
    assert!(!tables().contains(&"by_tenant".to_string()), "{t}");

    // allowed: 3 items, the rows overwritten inside a batch refused, exit 7
    let out = copy("by_tenant", "tenant", "s2.db", &["--allow-key-collisions"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(7), "{t}");
    let items = sdk.scan("by_tenant");
    assert_eq!(items.len(), 3, "{t}");
    assert!(t.contains("key_collision"), "{t}");

    // the key column itself: every row, each as PostgreSQL holds it
    let out = copy("by_id", "event_id", "s3.db", &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    let mut items = sdk.scan("by_id");
    assert_eq!(items.len(), 30, "{t}");
    items.sort_by_key(|i| match &i["event_id"] {
        Av::N(n) => n.parse::<i64>().unwrap(),
        other => panic!("{other:?}"),
    });
    for (n, item) in items.iter().enumerate() {
        assert_eq!(item["event_id"], Av::N(n.to_string()));
        assert_eq!(item["tenant"], Av::N((n % 3).to_string()));
        assert_eq!(item["body"], Av::S(format!("body {n}")));
    }
}
