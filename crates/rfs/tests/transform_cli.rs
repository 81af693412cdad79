//! `--transform` (jq programs) on the real binary with the demo repository (`books` 1326
//! live documents, `reviews` 473) into the testkit server, every document compared one by
//! one with what the program must make of it (computed here, independently):
//! - rename a field, drop a field, derive a field, route some documents to another index,
//!   filter documents (counted, exit 0), explode one document into two;
//! - `verify` with the same program is exact (filtered documents expected absent);
//! - a program that fails on some documents: each is a `transform_error` in the failure
//!   log, the rest delivered, exit 7;
//! - `rfs transform test` shows what each line becomes; `export --transform`.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Stdio;

use serde_json::{json, Value};
use testkit::server::{ServerConfig, TestServer};

mod common;
use common::{demo, expected_documents, rfs, run, status, SNAPSHOT};

/// Books: `author` becomes `writer`, `summary` is dropped, `decade` derived from `year`;
/// books before 1950 go to `old-books`. Reviews: those whose id's code points sum to a
/// multiple of 5 are filtered; the others are exploded into themselves and a `-copy`.
const PROGRAM: &str = r#"
if ._index == "books" then
  ._source |= (.writer = .author | del(.author) | del(.summary)
               | if (.year | type) == "number" then .decade = (.year - (.year % 10)) else . end)
  | if (._source.year | type) == "number" and ._source.year < 1950 then ._index = "old-books" else . end
elif ._index == "reviews" then
  if (._id | explode | add) % 5 == 0 then empty
  else ., (._id += "-copy" | ._source.copy = true) end
else . end
"#;

fn code_point_sum(id: &str) -> u64 {
    id.chars().map(|c| c as u64).sum()
}

/// What [`PROGRAM`] must make of the demo: (target index, id) → `_source`, and the number
/// of filtered documents.
fn transformed() -> (BTreeMap<(String, String), Value>, u64) {
    let mut out = BTreeMap::new();
    let mut filtered = 0;
    for ((index, id), source) in expected_documents() {
        match index.as_str() {
            "books" => {
                let mut s = source.as_object().unwrap().clone();
                let author = s.remove("author").unwrap_or(Value::Null);
                s.insert("writer".into(), author);
                s.remove("summary");
                let mut target = "books";
                if let Some(year) = s.get("year").and_then(Value::as_i64) {
                    s.insert("decade".into(), json!(year - year % 10));
                    if year < 1950 {
                        target = "old-books";
                    }
                }
                out.insert((target.to_string(), id), Value::Object(s));
            }
            "reviews" => {
                if code_point_sum(&id).is_multiple_of(5) {
                    filtered += 1;
                    continue;
                }
                let mut copy = source.clone();
                copy["copy"] = json!(true);
                out.insert((index.clone(), format!("{id}-copy")), copy);
                out.insert((index, id), source);
            }
            other => panic!("unexpected index {other}"),
        }
    }
    (out, filtered)
}

fn held(server: &TestServer, indices: &[&str]) -> BTreeMap<(String, String), Value> {
    let mut held = BTreeMap::new();
    for index in indices {
        for (id, source) in server.documents(index) {
            held.insert((index.to_string(), id), source);
        }
    }
    held
}

fn verify(server: &TestServer, program: &str) -> common::Ran {
    let mut c = rfs();
    c.arg("verify").arg(demo()).args([
        "--snapshot",
        SNAPSHOT,
        "--target",
        &server.url(),
        "--all",
        "--json",
        "--transform",
        program,
    ]);
    run(c)
}

#[test]
fn a_jq_program_renames_drops_derives_routes_filters_and_explodes_and_verify_is_exact() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let program_file = dir.path().join("shape.jq");
    std::fs::write(&program_file, PROGRAM).unwrap();
    let r = run(common::documents(
        &demo(),
        dir.path(),
        &server.url(),
        &["--transform-file", program_file.to_str().unwrap()],
    ));
    assert_eq!(r.code, Some(0), "filtered documents are not failures: {r}");
    let (want, filtered) = transformed();
    assert!(filtered > 0, "the demo has reviews to filter");
    assert!(
        r.stderr
            .contains(&format!("{filtered} documents were filtered out")),
        "{r}"
    );
    let got = held(&server, &["books", "old-books", "reviews"]);
    assert_eq!(got.len(), want.len(), "document count");
    for (key, source) in &want {
        assert_eq!(got.get(key), Some(source), "{key:?}");
    }
    assert!(
        want.keys().any(|(i, _)| i == "old-books"),
        "some books are routed"
    );
    // The store counts the filtered documents per reason; none is undelivered.
    let s = status(dir.path());
    assert_eq!(s["docs_filtered"], filtered, "{s}");
    assert_eq!(s["filtered_by_reason"]["filtered:program"], filtered, "{s}");
    assert_eq!(s["docs_skipped"], 0, "{s}");
    assert_eq!(s["docs_refused"], 0, "{s}");
    let log = std::fs::read_to_string(dir.path().join("failures.jsonl")).unwrap_or_default();
    assert!(
        log.trim().is_empty(),
        "filtered documents are not failures: {log}"
    );

    // verify applies the same program: exact, the filtered reviews expected absent.
    let r = verify(&server, PROGRAM);
    assert_eq!(r.code, Some(0), "{r}");
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["filtered"]["program"], filtered, "{report}");
    // Without the program the target does not match the snapshot.
    let r = verify(&server, ".");
    assert_eq!(r.code, Some(6), "{r}");
}

#[test]
fn a_failing_program_logs_each_document_and_exits_7() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let program = r#"if ._index == "reviews" and ((._id | explode | add) % 7 == 0) then error("bad review " + ._id) else . end"#;
    let r = run(common::documents(
        &demo(),
        dir.path(),
        &server.url(),
        &["--transform", program],
    ));
    assert_eq!(r.code, Some(7), "{r}");
    let expected = expected_documents();
    let failing: Vec<&String> = expected
        .keys()
        .filter(|(i, id)| i == "reviews" && code_point_sum(id).is_multiple_of(7))
        .map(|(_, id)| id)
        .collect();
    assert!(!failing.is_empty());
    let log = std::fs::read_to_string(dir.path().join("failures.jsonl")).unwrap();
    let records: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), failing.len(), "{log}");
    for rec in &records {
        assert_eq!(rec["error_type"], "transform_error", "{rec}");
        let id = rec["id"].as_str().unwrap();
        assert!(failing.contains(&&id.to_string()), "{rec}");
        assert!(
            rec["reason"]
                .as_str()
                .unwrap()
                .contains(&format!("bad review {id}")),
            "{rec}"
        );
    }
    // Everything else is delivered unchanged.
    let got = held(&server, &["books", "reviews"]);
    assert_eq!(got.len(), expected.len() - failing.len());
    for ((index, id), source) in &expected {
        if index == "reviews" && failing.contains(&id) {
            assert!(!got.contains_key(&(index.clone(), id.clone())));
        } else {
            assert_eq!(got.get(&(index.clone(), id.clone())), Some(source));
        }
    }
    let s = status(dir.path());
    assert_eq!(s["docs_skipped"], failing.len() as u64, "{s}");
    assert_eq!(
        s["undelivered_by_reason"]["skipped:transform_error"],
        failing.len() as u64
    );
    // verify with the program and the failure log is exact: the failing reviews are
    // expected absent, and each is recorded in the log.
    let mut c = rfs();
    c.arg("verify").arg(demo()).args([
        "--snapshot",
        SNAPSHOT,
        "--target",
        &server.url(),
        "--all",
        "--json",
        "--transform",
        program,
        "--failure-log",
        dir.path().join("failures.jsonl").to_str().unwrap(),
    ]);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(r.stdout.contains("transform_error"), "{r}");
}

#[test]
fn transform_test_shows_what_each_document_becomes() {
    let mut c = rfs();
    c.args([
        "transform",
        "test",
        "--transform",
        r#"if ._source.drop then {_filtered: "dropped"} elif ._source.fail then error("no") else ._source.n += 1 | ., (._id += "b") end"#,
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"{\"_index\":\"i\",\"_id\":\"a\",\"_source\":{\"n\":1}}\n{\"drop\":true}\n{\"fail\":true}\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    let first: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(
        first,
        json!({"_index":"i","_id":"a","op":"index","_source":{"n":2}})
    );
    let second: Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(second["_id"], "ab");
    assert_eq!(lines[2], "# filtered: dropped");
    assert!(
        lines[3].starts_with("# error: line 3: transform_error: \"no\""),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(7));

    // A program that does not compile is a usage error naming the flag.
    let mut c = rfs();
    c.args(["transform", "test", "--transform", ".a | {b: }"]);
    let r = run(c);
    assert_eq!(r.code, Some(1), "{r}");
    assert!(r.stderr.contains("--transform"), "{r}");
    assert!(r.stderr.contains("line 1"), "{r}");
}

#[test]
fn export_applies_the_program() {
    let mut c = rfs();
    c.arg("export").arg(demo()).args([
        "--snapshot",
        SNAPSHOT,
        "--index",
        "books",
        "--out",
        "-",
        "--transform",
        "._source = {title: ._source.title}",
    ]);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    let expected = expected_documents();
    let mut n = 0;
    for line in r.stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let key = (
            v["_index"].as_str().unwrap().to_string(),
            v["_id"].as_str().unwrap().to_string(),
        );
        let want = json!({"title": expected[&key]["title"]});
        assert_eq!(v["_source"], want, "{line}");
        n += 1;
    }
    assert_eq!(n, 1326);
}

/// A program of the common form (rename, delete, set, route by `_index`) runs on the raw
/// `_source` without building the document (`programs::field_edits`): the same documents
/// as jq makes, compared one by one, and `verify` with it is exact.
#[test]
fn a_field_edit_program_takes_the_fast_path_and_delivers_what_jq_would() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let program = r#"._index = "shelf" | ._source |= (.writer = .author | del(.author, .summary) | .checked = true)"#;
    let r = run(common::documents(
        &demo(),
        dir.path(),
        &server.url(),
        &["--transform", program],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    let mut want = BTreeMap::new();
    for ((_, id), source) in expected_documents() {
        let mut s = source.as_object().unwrap().clone();
        let author = s.remove("author").unwrap_or(Value::Null);
        s.insert("writer".into(), author);
        s.remove("summary");
        s.insert("checked".into(), json!(true));
        // both demo indices land in one: their ids do not collide
        assert!(want.insert(id, Value::Object(s)).is_none());
    }
    let got: BTreeMap<String, Value> = server.documents("shelf").into_iter().collect();
    assert_eq!(got.len(), want.len(), "document count");
    for (id, source) in &want {
        assert_eq!(got.get(id), Some(source), "{id}");
    }
    let r = verify(&server, program);
    assert_eq!(r.code, Some(0), "{r}");
}

/// `rfs documents` with the reference tool's transformer configuration in a file, then
/// `verify` with the same file (exact).
fn migrate_with_config(
    server: &TestServer,
    dir: &std::path::Path,
    config: &std::path::Path,
) -> (common::Ran, common::Ran) {
    migrate_with_config_and(server, dir, config, &[])
}

/// [`migrate_with_config`] with more flags for both commands.
fn migrate_with_config_and(
    server: &TestServer,
    dir: &std::path::Path,
    config: &std::path::Path,
    more: &[&str],
) -> (common::Ran, common::Ran) {
    let config = config.to_str().unwrap();
    let mut flags = vec!["--doc-transformer-config-file", config];
    flags.extend_from_slice(more);
    let r = run(common::documents(&demo(), dir, &server.url(), &flags));
    let mut c = rfs();
    c.arg("verify").arg(demo()).args([
        "--snapshot",
        SNAPSHOT,
        "--target",
        &server.url(),
        "--all",
        "--json",
        "--doc-transformer-config-file",
        config,
    ]);
    c.args(more);
    (r, run(c))
}

/// A JavaScript transform in the reference tool's form (script file, bindings): books get
/// `writer` for `author` and go to `js-books`; reviews under `minPages` pages are filtered.
/// On each engine (node: V8 given batches; QuickJS), with the same documents delivered.
#[test]
fn a_reference_style_javascript_transform_migrates_the_demo_and_verify_is_exact() {
    javascript_migrates_the_demo_on("quickjs");
    javascript_migrates_the_demo_on("node");
}

fn javascript_migrates_the_demo_on(engine: &str) {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("shape.js"),
        r#"
function main(context) {
  return (documents) => documents.flatMap((d) => {
    const op = d.get("operation");
    const src = d.get("document");
    if (op.get("_index") === "reviews" && src.get("pages") < context.minPages) return [];
    if (op.get("_index") === "books") {
      src.set("writer", src.get("author"));
      src.delete("author");
      op.set("_index", "js-books");
    }
    return [d];
  });
}
(() => main)();
"#,
    )
    .unwrap();
    let config = dir.path().join("transformers.json");
    std::fs::write(
        &config,
        r#"[{"JsonJSTransformerProvider": {"initializationScriptFile": "shape.js",
             "bindingsObject": "{\"minPages\": 150}"}}]"#,
    )
    .unwrap();
    let mut want = BTreeMap::new();
    let mut filtered = 0u64;
    for ((index, id), source) in expected_documents() {
        let source = as_javascript_numbers(source);
        if index == "reviews" {
            if source["pages"].as_i64().unwrap() < 150 {
                filtered += 1;
            } else {
                want.insert((index, id), source);
            }
        } else {
            let mut s = source.as_object().unwrap().clone();
            let author = s.remove("author").unwrap();
            s.insert("writer".into(), author);
            want.insert(("js-books".to_string(), id), Value::Object(s));
        }
    }
    assert!(filtered > 0);
    let (r, v) = migrate_with_config_and(&server, dir.path(), &config, &["--js-engine", engine]);
    assert_eq!(r.code, Some(0), "{engine}: {r}");
    let got = held(&server, &["js-books", "reviews", "books"]);
    assert_eq!(got.len(), want.len(), "document count");
    for (key, source) in &want {
        assert_eq!(got.get(key), Some(source), "{key:?}");
    }
    assert_eq!(status(dir.path())["docs_filtered"], filtered);
    assert_eq!(v.code, Some(0), "{v}");
    let report: Value = serde_json::from_str(&v.stdout).unwrap();
    assert_eq!(report["filtered"]["program"], filtered, "{report}");
}

/// A JMESPath transform in the reference tool's form: two expressions in a row over the
/// list of documents — the first filters biography reviews, the second routes every
/// document to `jp-INDEX` and derives two fields.
#[test]
fn a_reference_style_jmespath_transform_migrates_the_demo_and_verify_is_exact() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("transformers.json");
    let text = json!([{"JsonJMESPathTransformerProvider": [
        {"script": "[?operation._index != 'reviews' || document.genre != 'biography']"},
        {"script": "[*].merge(@, {operation: merge(operation, {_index: join('-', ['jp', operation._index])}), \
                    document: merge(document, {via: 'jmespath', label: join(' / ', [document.title, document.genre])})})"}
    ]}]);
    std::fs::write(&config, text.to_string()).unwrap();
    let mut want = BTreeMap::new();
    let mut filtered = 0u64;
    for ((index, id), source) in expected_documents() {
        if index == "reviews" && source["genre"] == "biography" {
            filtered += 1;
            continue;
        }
        let mut s = source.clone();
        s["via"] = json!("jmespath");
        s["label"] = json!(format!(
            "{} / {}",
            source["title"].as_str().unwrap(),
            source["genre"].as_str().unwrap()
        ));
        want.insert((format!("jp-{index}"), id), s);
    }
    assert!(filtered > 0);
    let (r, v) = migrate_with_config(&server, dir.path(), &config);
    assert_eq!(r.code, Some(0), "{r}");
    let got = held(&server, &["jp-books", "jp-reviews", "books", "reviews"]);
    assert_eq!(got.len(), want.len(), "document count");
    for (key, source) in &want {
        assert_eq!(got.get(key), Some(source), "{key:?}");
    }
    let s = status(dir.path());
    assert_eq!(s["filtered_by_reason"]["filtered:program"], filtered, "{s}");
    assert_eq!(v.code, Some(0), "{v}");
    let report: Value = serde_json::from_str(&v.stdout).unwrap();
    assert_eq!(report["filtered"]["program"], filtered, "{report}");
}

/// The program is part of the migration's identity: resuming a store with another program
/// is refused (naming both), `verify --store` with the run's program passes, and with
/// `--migration NAME` the name alone is the identity.
#[test]
fn a_store_refuses_a_migration_with_another_program() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let first = "._source.n = 1";
    let r = run(common::documents(
        &demo(),
        dir.path(),
        &server.url(),
        &["--transform", first],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    let s = status(dir.path());
    let recorded = s["migration"]["program"].as_str().unwrap().to_string();
    assert!(recorded.starts_with("jq:"), "{s}");
    for other in [
        vec!["--transform", "._source.n = 2"],
        vec![],
        vec![
            "--doc-transformer-config",
            r#"{"JsonJMESPathTransformerProvider": {"script": "@"}}"#,
        ],
    ] {
        let r = run(common::documents(
            &demo(),
            dir.path(),
            &server.url(),
            &other,
        ));
        assert_eq!(r.code, Some(2), "{other:?}: {r}");
        assert!(r.stderr.contains("another migration"), "{other:?}: {r}");
        assert!(
            r.stderr.contains(&format!("program={recorded}")),
            "{other:?}: {r}"
        );
    }
    // verify against the store: the same program passes, another is refused.
    let verify_with_store = |program: &str| {
        let mut c = rfs();
        c.arg("verify").arg(demo()).args([
            "--snapshot",
            SNAPSHOT,
            "--target",
            &server.url(),
            "--store",
            &common::sqlite(dir.path()),
            "--transform",
            program,
        ]);
        run(c)
    };
    let v = verify_with_store(first);
    assert_eq!(v.code, Some(0), "{v}");
    let v = verify_with_store("._source.n = 3");
    assert_eq!(v.code, Some(2), "{v}");
    assert!(v.stderr.contains("another migration"), "{v}");
    // A named migration is its name alone: another program may resume it.
    let named = tempfile::tempdir().unwrap();
    for program in [first, "._source.n = 2"] {
        let r = run(common::documents(
            &demo(),
            named.path(),
            &server.url(),
            &["--transform", program, "--migration", "m1"],
        ));
        // 3: the named migration is finished already; what matters is that it is not
        // refused as another migration.
        assert!(matches!(r.code, Some(0 | 3)), "{program}: {r}");
        assert!(!r.stderr.contains("another migration"), "{r}");
    }
}

/// A JSON value as a JavaScript transform gives it back: numbers are doubles, so a
/// whole float (`86.0`) comes back as an integer (`86`), as in the reference tool.
fn as_javascript_numbers(v: Value) -> Value {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9e15 => json!(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(as_javascript_numbers).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, as_javascript_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}
