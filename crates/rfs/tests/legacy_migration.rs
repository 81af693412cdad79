//! `rfs run` and `rfs verify` from Elasticsearch 1.7- and 2.4-layout repositories, written by
//! the project's writer around indexes written by real Lucene 4.10.4 (the Lucene of ES 1.7:
//! `_uid` = `type#id`, LZF-compressed `_source` for a third of the documents, `_parent` with
//! its `_routing`, `_timestamp`, `_ttl`), into the test server posing as OpenSearch 2.19 and
//! into `osmem-server`:
//! every document delivered, compared one by one with what Lucene and compress-lzf read; the
//! two mapping types merged into one index, or split into one index per type.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use snapshot::write::{IndexSpec, ShardSource, SnapshotSpec};
use snapshot::write_legacy::{write_legacy_repository, LegacyLayout};
use snapshot::TypeMapping;
use testkit::server::{ServerConfig, TestServer};

const SNAPSHOT: &str = "snap-1";
const INDEX: &str = "tweets";

fn lucene4(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../lucene/tests/data/lucene4")
        .join(name)
}

/// (type, id) → source of every live document with a `_source` in `fixture`.
fn expected(fixture: &str) -> BTreeMap<(String, String), Value> {
    std::fs::read_to_string(lucene4(&format!("{fixture}.sources.jsonl")))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let source: Value = serde_json::from_str(v["source"].as_str().unwrap()).unwrap();
            let key = (
                v["type"].as_str().unwrap().to_string(),
                v["id"].as_str().unwrap().to_string(),
            );
            (key, source)
        })
        .collect()
}

fn write(dest: &Path, layout: LegacyLayout, fixture: &str) {
    let mut spec = SnapshotSpec::new(SNAPSHOT);
    spec.indices = vec![IndexSpec {
        name: INDEX.into(),
        settings: Map::new(),
        mappings: vec![
            TypeMapping {
                doc_type: "tweet".into(),
                mapping: json!({"_all": {"enabled": true},
                                "properties": {"text": {"type": "string"}, "n": {"type": "long"},
                                               "price": {"type": "double"}}}),
            },
            TypeMapping {
                doc_type: "user".into(),
                mapping: json!({"_parent": {"type": "user"}, "_timestamp": {"enabled": true},
                                "_ttl": {"enabled": true},
                                "properties": {"text": {"type": "string"},
                                               "tag": {"type": "string", "index": "not_analyzed"},
                                               "n": {"type": "long"}, "price": {"type": "double"}}}),
            },
        ],
        aliases: Map::new(),
        shards: vec![ShardSource::Lucene(Arc::new(
            lucene::FsDirectory::open(lucene4(fixture)).unwrap(),
        ))],
        extra: Map::new(),
    }];
    write_legacy_repository(dest, &[spec], layout).unwrap();
}

fn rfs(args: &[&str], repo: &Path, work: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rfs"))
        .env_remove("RFS_CONFIG")
        .args(args)
        .arg("--repo")
        .arg(repo)
        .current_dir(work)
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

fn run(repo: &Path, target: &str, extra: &[&str]) -> (Option<i32>, String) {
    let work = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", work.path().join("state.db").display());
    let failures = work.path().join("failures.jsonl");
    let mut args = vec![
        "--quiet",
        "run",
        "--snapshot",
        SNAPSHOT,
        "--target",
        target,
        "--no-progress",
        "--store",
        &store,
        "--failure-log",
        failures.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    rfs(&args, repo, work.path())
}

/// `rfs verify --all` of the migrated snapshot against `target` exits 0.
fn verify_all(repo: &Path, target: &str, what: &str) {
    let work = tempfile::tempdir().unwrap();
    let (code, report) = rfs(
        &[
            "verify",
            "--all",
            "--snapshot",
            SNAPSHOT,
            "--target",
            target,
        ],
        repo,
        work.path(),
    );
    assert_eq!(code, Some(0), "{what}: verify:\n{report}");
}

/// After `--multi-type split`: each type's documents, and only those, in `INDEX_<type>`
/// (`documents` gives an index's `_source`s by `_id`).
fn each_type_split(
    want: &BTreeMap<(String, String), Value>,
    documents: impl Fn(&str) -> BTreeMap<String, Value>,
    what: &str,
) {
    for t in ["tweet", "user"] {
        let got = documents(&format!("{INDEX}_{t}"));
        let of_type: Vec<_> = want.iter().filter(|((ty, _), _)| ty == t).collect();
        assert!(!of_type.is_empty());
        assert_eq!(got.len(), of_type.len(), "{what} split {t}");
        for ((_, id), source) in of_type {
            assert_eq!(got.get(id), Some(source), "{what} split {t}: {id}");
        }
    }
}

#[test]
fn es1_and_es2_repositories_migrate_every_document() {
    for (layout, fixture) in [
        (LegacyLayout::Es1, "l4-cfs"),
        (LegacyLayout::Es2, "l4-nocfs"),
    ] {
        let what = format!("{layout:?} {fixture}");
        let want = expected(fixture);
        let repo = tempfile::tempdir().unwrap();
        write(repo.path(), layout, fixture);

        // Merged (the default): one index, every document by its id.
        let server = TestServer::start(ServerConfig::opensearch("2.19.2"));
        let (code, out) = run(repo.path(), &server.url(), &[]);
        assert_eq!(code, Some(0), "{what}:\n{out}");
        let got = server.documents(INDEX);
        assert_eq!(got.len(), want.len(), "{what}: documents\n{out}");
        for ((_, id), source) in &want {
            assert_eq!(got.get(id), Some(source), "{what}: {id}");
        }
        // The 1.x mappings were converted: no `string` type, `_all`, `_timestamp`, `_ttl`
        // or `_parent` reached the target.
        let mappings = server.index(INDEX).unwrap().mappings.to_string();
        for gone in ["\"string\"", "_all", "_timestamp", "_ttl", "_parent"] {
            assert!(
                !mappings.contains(gone),
                "{what}: {gone} in {mappings}\n{out}"
            );
        }
        assert!(
            mappings.contains("\"text\"") && mappings.contains("\"keyword\""),
            "{what}: {mappings}\n{out}"
        );
        assert!(out.contains(" 0 errors, 0 blocked"), "{what}:\n{out}");
        verify_all(repo.path(), &server.url(), &what);

        // Split: one index per mapping type.
        let server = TestServer::start(ServerConfig::opensearch("2.19.2"));
        let (code, out) = run(repo.path(), &server.url(), &["--multi-type", "split"]);
        assert_eq!(code, Some(0), "{what} split:\n{out}");
        each_type_split(&want, |i| server.documents(i), &format!("{what}\n{out}"));
    }
}

/// Every `_source` of `index` on the server at `port`, by `_id`, read with a plain HTTP
/// request (not through rfs's client).
fn documents_at(port: u16, index: &str) -> BTreeMap<String, Value> {
    let (code, body) =
        testkit::services::raw_http(port, "POST", &format!("/{index}/_refresh"), &[], b"").unwrap();
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let query = json!({"size": 10000, "query": {"match_all": {}}}).to_string();
    let (code, body) = testkit::services::raw_http(
        port,
        "POST",
        &format!("/{index}/_search"),
        &[("Content-Type", "application/json")],
        query.as_bytes(),
    )
    .unwrap();
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let v: Value = serde_json::from_slice(&body).unwrap();
    v["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["_id"].as_str().unwrap().to_string(), h["_source"].clone()))
        .collect()
}

/// The same two layouts into `osmem-server` (an OpenSearch-API server written by others):
/// every document read back by plain HTTP equals what Lucene and compress-lzf read,
/// `verify --all` agrees, and `--multi-type split` routes each type to its own index.
#[test]
fn es1_and_es2_repositories_migrate_into_osmem() {
    for (layout, fixture) in [
        (LegacyLayout::Es1, "l4-cfs"),
        (LegacyLayout::Es2, "l4-nocfs"),
    ] {
        let what = format!("{layout:?} {fixture}");
        let Some(osmem) =
            testkit::services::Osmem::start("es1_and_es2_repositories_migrate_into_osmem")
        else {
            return;
        };
        let want = expected(fixture);
        let repo = tempfile::tempdir().unwrap();
        write(repo.path(), layout, fixture);
        let (code, out) = run(repo.path(), &osmem.url(), &[]);
        assert_eq!(code, Some(0), "{what}:\n{out}");
        let got = documents_at(osmem.port(), INDEX);
        assert_eq!(got.len(), want.len(), "{what}: documents\n{out}");
        for ((_, id), source) in &want {
            assert_eq!(got.get(id), Some(source), "{what}: {id}");
        }
        verify_all(repo.path(), &osmem.url(), &what);

        let Some(osmem) =
            testkit::services::Osmem::start("es1_and_es2_repositories_migrate_into_osmem")
        else {
            return;
        };
        let (code, out) = run(repo.path(), &osmem.url(), &["--multi-type", "split"]);
        assert_eq!(code, Some(0), "{what} split:\n{out}");
        each_type_split(
            &want,
            |i| documents_at(osmem.port(), i),
            &format!("{what}\n{out}"),
        );
    }
}
