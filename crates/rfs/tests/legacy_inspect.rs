//! `rfs inspect` on Elasticsearch 1.x- and 2.x-layout repositories (written by the project's
//! writer around indexes written by real Lucene 4.10.4): the layout family, the Lucene
//! versions of the segments and what is not supported are named; an index whose `_source` is
//! disabled is rebuilt from its Lucene 4.10 doc values, each document equal to Lucene's own
//! reading of them; an unsupported format fails its work item at the first attempt; a
//! damaged blob is an error naming it, never a crash.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use snapshot::write::{IndexSpec, ShardSource, SnapshotSpec};
use snapshot::write_legacy::{write_legacy_repository, LegacyLayout};
use snapshot::TypeMapping;
use testkit::server::{ServerConfig, TestServer};

const SNAPSHOT: &str = "snap-1";

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../lucene/tests/data")
        .join(path)
}

fn index(name: &str, fixture: &str, mappings: Vec<TypeMapping>) -> IndexSpec {
    IndexSpec {
        name: name.into(),
        settings: Map::new(),
        mappings,
        aliases: Map::new(),
        shards: vec![ShardSource::Lucene(Arc::new(
            lucene::FsDirectory::open(data(fixture)).unwrap(),
        ))],
        extra: Map::new(),
    }
}

/// `tweets` (l4-cfs: every document has its `_source`; the mapping has `_all`, `_parent`,
/// `_timestamp` and `_ttl`).
fn tweets() -> IndexSpec {
    index(
        "tweets",
        "lucene4/l4-cfs",
        vec![
            TypeMapping {
                doc_type: "tweet".into(),
                mapping: json!({"_all": {"enabled": true},
                                "properties": {"text": {"type": "string"}}}),
            },
            TypeMapping {
                doc_type: "user".into(),
                mapping: json!({"_parent": {"type": "user"}, "_timestamp": {"enabled": true},
                                "_ttl": {"enabled": true}, "_all": {"enabled": false},
                                "properties": {"text": {"type": "string"}}}),
            },
        ],
    )
}

/// `metrics` (l4-nosource: `_source` disabled, values only in Lucene 4.10 doc values).
fn metrics() -> IndexSpec {
    index(
        "metrics",
        "lucene4-sourceless/l4-nosource",
        vec![TypeMapping {
            doc_type: "doc".into(),
            mapping: json!({"_source": {"enabled": false},
                            "properties": {"n": {"type": "long", "doc_values": true},
                                           "tag": {"type": "string", "index": "not_analyzed",
                                                   "doc_values": true}}}),
        }],
    )
}

fn write(dest: &Path, layout: LegacyLayout, indices: Vec<IndexSpec>) {
    let mut spec = SnapshotSpec::new(SNAPSHOT);
    spec.indices = indices;
    write_legacy_repository(dest, &[spec], layout).unwrap();
}

fn rfs(args: &[&str], repo: &Path) -> (Option<i32>, String, String) {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rfs"))
        .env_remove("RFS_CONFIG")
        .args(args)
        .arg("--repo")
        .arg(repo)
        .current_dir(work.path())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn inspect_json(repo: &Path) -> (Option<i32>, Value) {
    let (code, out, err) = rfs(&["inspect", "--json"], repo);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}:\n{out}\n{err}"));
    (code, v)
}

fn index_of<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["snapshots"][0]["indices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no index {name} in {report:#}"))
}

fn unsupported(index: &Value) -> Vec<(String, bool)> {
    index["unsupported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["what"].as_str().unwrap().to_string(), u["blocks"] == true))
        .collect()
}

#[test]
fn inspect_names_layout_lucene_versions_and_what_is_unsupported() {
    for (layout, family, version) in [
        (LegacyLayout::Es1, "Elasticsearch 1.x layout", "1.7.6"),
        (LegacyLayout::Es2, "Elasticsearch 2.x layout", "2.4.6"),
    ] {
        let repo = tempfile::tempdir().unwrap();
        write(repo.path(), layout, vec![tweets()]);
        let (code, report) = inspect_json(repo.path());
        assert_eq!(code, Some(0), "{layout:?}: {report:#}");
        let snap = &report["snapshots"][0];
        assert_eq!(snap["layout"], family, "{layout:?}");
        assert_eq!(snap["version"], version, "{layout:?}");
        let ix = index_of(&report, "tweets");
        assert_eq!(ix["lucene_versions"], json!(["4.10.4"]), "{layout:?}");
        assert_eq!(ix["mapping_types"], json!(["tweet", "user"]), "{layout:?}");
        assert_eq!(ix["source_present"], true, "{layout:?}");
        assert_eq!(report["errors"], 0, "{layout:?}: {report:#}");
        let u = unsupported(ix);
        // The price_dv doc values of Lucene 4.10 are read: nothing about them is unsupported.
        assert!(
            !u.iter().any(|(w, _)| w.starts_with("doc values")),
            "{layout:?}: {u:?}"
        );
        // The legacy meta fields, with the types that have them (`_all` is disabled in
        // `user`, so it is named for `tweet` alone).
        for (field, types) in [
            ("_all", "tweet"),
            ("_timestamp", "user"),
            ("_ttl", "user"),
            ("_parent", "user"),
        ] {
            let want = format!("{field} in mapping type(s) {types}:");
            assert!(
                u.iter().any(|(w, b)| w.starts_with(&want) && !b),
                "{layout:?}: {want} in {u:?}"
            );
        }

        let (code, text, err) = rfs(&["inspect"], repo.path());
        assert_eq!(code, Some(0), "{layout:?}:\n{text}\n{err}");
        assert!(
            text.contains(&format!("version {version}  ({family})")),
            "{text}"
        );
        assert!(text.contains("lucene [4.10.4]"), "{text}");
        assert!(!text.contains("doc values"), "{text}");
        assert!(!text.contains("ERROR"), "{text}");
    }
}

#[test]
fn lucene4_doc_values_without_source_are_rebuilt_in_inspect_and_run() {
    let want: Vec<Value> =
        std::fs::read_to_string(data("lucene4-sourceless/l4-nosource.docvalues.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(want.len(), 37);
    for layout in [LegacyLayout::Es1, LegacyLayout::Es2] {
        let repo = tempfile::tempdir().unwrap();
        write(repo.path(), layout, vec![tweets(), metrics()]);
        let (code, report) = inspect_json(repo.path());
        assert_eq!(code, Some(0), "{layout:?}: {report:#}");
        assert_eq!(report["errors"], 0, "{layout:?}: {report:#}");
        let ix = index_of(&report, "metrics");
        assert_eq!(ix["source_present"], false, "{layout:?}");
        assert_eq!(ix["live_docs"], 37, "{layout:?}");
        let u = unsupported(ix);
        assert!(
            !u.iter().any(|(w, b)| *b || w.starts_with("doc values")),
            "{layout:?}: {u:?}"
        );
        let (code, text, _) = rfs(&["inspect"], repo.path());
        assert_eq!(code, Some(0), "{layout:?}:\n{text}");
        assert!(!text.contains("ERROR"), "{text}");

        // The run rebuilds every document's _source from the Lucene 4.10 doc values: `n`
        // (NUMERIC) and `tag` (SORTED_SET) as Lucene itself reads them.
        let server = TestServer::start(ServerConfig::opensearch("2.19.2"));
        let work = tempfile::tempdir().unwrap();
        let store = format!("sqlite://{}", work.path().join("state.db").display());
        let (code, out, err) = rfs(
            &[
                "--quiet",
                "run",
                "--snapshot",
                SNAPSHOT,
                "--target",
                &server.url(),
                "--no-progress",
                "--store",
                &store,
                "--index",
                "metrics",
            ],
            repo.path(),
        );
        let all = format!("{out}\n{err}");
        assert_eq!(code, Some(0), "{layout:?}:\n{all}");
        let docs = server.documents("metrics");
        assert_eq!(docs.len(), want.len(), "{layout:?}: {docs:#?}");
        for w in &want {
            let id = w["id"].as_str().unwrap();
            let got = docs
                .get(id)
                .unwrap_or_else(|| panic!("{layout:?}: no {id}"));
            let mut expected = Map::new();
            if !w["n"].is_null() {
                expected.insert("n".into(), w["n"].clone());
            }
            match w["tag"].as_array().unwrap().as_slice() {
                [] => {}
                [one] => {
                    expected.insert("tag".into(), one.clone());
                }
                many => {
                    expected.insert("tag".into(), Value::Array(many.to_vec()));
                }
            }
            assert_eq!(got, &Value::Object(expected), "{layout:?} {id}");
        }
    }
}

#[test]
fn a_damaged_legacy_blob_is_an_error_naming_it() {
    let repo = tempfile::tempdir().unwrap();
    write(repo.path(), LegacyLayout::Es1, vec![tweets()]);
    let blob = "indices/tweets/0/snapshot-snap-1";
    assert!(repo.path().join(blob).is_file());
    std::fs::write(repo.path().join(blob), b"{\"snapshot\": [1, 2").unwrap();
    let (code, text, err) = rfs(&["inspect"], repo.path());
    assert_eq!(code, Some(1), "{text}\n{err}");
    assert!(
        text.contains("    shard 0: ERROR") && text.contains(blob),
        "{text}\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// `odd` (l4-dummy: Lucene 4.10 stored fields in a test codec's format the reader does not
/// handle).
fn odd() -> IndexSpec {
    index(
        "odd",
        "lucene4-unsupported/l4-dummy",
        vec![TypeMapping {
            doc_type: "tweet".into(),
            mapping: json!({"properties": {"text": {"type": "string"}}}),
        }],
    )
}

/// An unsupported format cannot be read on a retry: the item that meets one (here stored
/// fields in Lucene's test-only `DummyCompressingStoredFields` format) is FAILED at its
/// first attempt, with the reason naming the file, and the run ends at once (not after 8
/// attempts and their pauses); the exit code says something was not delivered.
#[test]
fn an_unsupported_format_fails_its_item_at_the_first_attempt() {
    let repo = tempfile::tempdir().unwrap();
    write(repo.path(), LegacyLayout::Es1, vec![odd()]);
    let server = TestServer::start(ServerConfig::opensearch("2.19.2"));
    let work = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", work.path().join("state.db").display());
    let started = std::time::Instant::now();
    let (code, out, err) = rfs(
        &[
            "run",
            "--snapshot",
            SNAPSHOT,
            "--target",
            &server.url(),
            "--no-progress",
            "--store",
            &store,
        ],
        repo.path(),
    );
    let took = started.elapsed();
    let all = format!("{out}\n{err}");
    assert_ne!(code, Some(0), "{all}");
    assert_eq!(
        all.matches("working on item").count(),
        1,
        "one attempt at the one item:\n{all}"
    );
    assert!(
        all.contains("without retry")
            && all.contains("_0.fdt")
            && all.contains("DummyCompressingStoredFieldsData"),
        "{all}"
    );
    // 8 attempts took ~7 s of pauses alone; one attempt takes well under that.
    eprintln!("the run took {took:?}");
    assert!(server.documents("odd").is_empty());

    let st = Command::new(env!("CARGO_BIN_EXE_rfs"))
        .env_remove("RFS_CONFIG")
        .args(["status", "--json", "--store", &store])
        .current_dir(work.path())
        .output()
        .unwrap();
    let st: Value = serde_json::from_slice(&st.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&st.stderr)));
    assert_eq!(st["items"]["failed"], 1, "{st:#}");
    let failed = &st["failed_items"][0];
    assert_eq!(failed["attempts"], 1, "{st:#}");
    let reason = failed["last_error"].as_str().unwrap();
    assert!(
        reason.contains("failed at attempt 1 without retry")
            && reason
                .contains("unsupported: stored-fields codec \"DummyCompressingStoredFieldsData\""),
        "{reason}"
    );
}
