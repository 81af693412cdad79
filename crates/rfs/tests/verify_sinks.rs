//! `rfs verify --to URL`: the one verifier looks a snapshot's documents up in whatever sink
//! the migration wrote to, through the lookup port — files `rfs export` wrote, and a
//! DynamoDB table `rfs copy` filled (dynalite). Each exact first (exit 0, every document
//! compared), then one document changed on the target by an independent client (the file
//! rewritten with serde_json; the item put with the AWS SDK): exit 6, the id named.

mod common;
mod dynamo;

use common::{demo, expected_documents, rfs, run, sqlite, LIVE, SNAPSHOT};
use dynamo::{aws_env, s, Sdk, SECRET};
use serde_json::Value;

/// `rfs verify` of the demo against `to`, every document compared.
fn verify(to: &str) -> common::Ran {
    let mut c = rfs();
    c.arg("verify")
        .arg(demo())
        .args(["--snapshot", SNAPSHOT, "--to", to, "--all"]);
    aws_env(&mut c);
    run(c)
}

/// The report's line of `index`.
fn index_line<'a>(r: &'a common::Ran, index: &str) -> &'a str {
    r.stdout
        .lines()
        .find(|l| l.starts_with(index))
        .unwrap_or_else(|| panic!("no line for {index}: {r}"))
}

#[test]
fn a_snapshot_exported_to_files_verifies_and_a_changed_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut c = rfs();
    c.arg("export")
        .arg(demo())
        .args(["--snapshot", SNAPSHOT, "--out"])
        .arg(&out)
        .arg("--failure-log")
        .arg(dir.path().join("failures.jsonl"));
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");

    let to = format!("file://{}", out.display());
    let r = verify(&to);
    assert_eq!(r.code, Some(0), "{r}");
    for (index, n) in LIVE {
        // index, expected, refused, target, compared: every document, all ok.
        let line = index_line(&r, index);
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            cols[1..6],
            [&n.to_string(), "0", &n.to_string(), &n.to_string(), "0"],
            "{line}"
        );
        assert!(line.ends_with("ok"), "{line}");
    }

    // One document of books changed in its file (an independent edit of the JSON line).
    let file = out.join("books.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut changed_id = String::new();
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(n, l)| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if n == 17 {
                changed_id = v["_id"].as_str().unwrap().to_string();
                v["_source"]["tampered"] = Value::from(true);
            }
            v.to_string()
        })
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let r = verify(&to);
    assert_eq!(r.code, Some(6), "{r}");
    assert!(
        r.stdout.contains(&format!(
            "    different {changed_id}: field tampered only in the target\n"
        )),
        "{r}"
    );
    assert!(r.all().contains("MISMATCH"), "{r}");
    // The JSON report counts it.
    let mut c = rfs();
    c.arg("verify")
        .arg(demo())
        .args(["--snapshot", SNAPSHOT, "--to", &to, "--all", "--json"]);
    let r = run(c);
    assert_eq!(r.code, Some(6), "{r}");
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["ok"], false, "{v}");
    let books = v["indices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["index"] == "books")
        .unwrap();
    assert_eq!(books["different"], serde_json::json!([changed_id]), "{v}");
    assert_eq!(books["compared"], 1326, "{v}");
}

#[test]
fn a_snapshot_copied_into_dynamodb_verifies_and_a_changed_item_is_named() {
    let Some(d) = testkit::services::Dynalite::start("verify_snapshot_into_dynamodb") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let to = format!(
        "dynamodb://docs?region={}&endpoint={}",
        d.region(),
        d.endpoint()
    );
    let mut c = rfs();
    c.arg("copy")
        .args(["--from", &format!("file://{}", demo().display())])
        .args(["--to", &to, "--snapshot", SNAPSHOT, "--create-table"])
        .arg("--store")
        .arg(sqlite(dir.path()))
        .arg("--failure-log")
        .arg(dir.path().join("failures.jsonl"))
        .arg("--no-progress")
        .current_dir(dir.path());
    aws_env(&mut c);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");

    let r = verify(&to);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(!r.all().contains(SECRET), "{r}");
    for (index, n) in LIVE {
        let line = index_line(&r, index);
        let cols: Vec<&str> = line.split_whitespace().collect();
        // expected, refused, target (a Scan count of the index's items), compared
        assert_eq!(
            cols[1..5],
            [&n.to_string(), "0", &n.to_string(), &n.to_string()],
            "{line}"
        );
    }

    // One item changed with the AWS SDK: a review's field, the rest kept.
    let expected = expected_documents();
    let ((index, id), _) = expected.iter().find(|((i, _), _)| i == "reviews").unwrap();
    let sdk = Sdk::new(&d.endpoint());
    let mut item = sdk
        .scan("docs")
        .into_iter()
        .find(|i| i.get("_id") == Some(&s(id.clone())))
        .unwrap();
    assert_eq!(item["_index"], s(index.clone()));
    item.insert("tampered".into(), s("yes"));
    sdk.put("docs", item);
    let r = verify(&to);
    assert_eq!(r.code, Some(6), "{r}");
    assert!(
        r.stdout.contains(&format!(
            "    different {id}: field tampered only in the target\n"
        )),
        "{r}"
    );
    let line = r.stdout.lines().find(|l| l.starts_with("reviews")).unwrap();
    assert!(line.ends_with("MISMATCH"), "{line}");
    let line = r.stdout.lines().find(|l| l.starts_with("books")).unwrap();
    assert!(line.ends_with("ok"), "{line}");
}
